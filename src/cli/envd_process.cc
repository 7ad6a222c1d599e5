#include "cli/envd_process.h"

#include <fmt/format.h>

#include "base/encoding.h"
#include "envd/envelope.h"
#include "envd/version.h"

namespace warren::cli {
namespace {

constexpr size_t kMaxMessage = 16 << 20;

// A Connect error body's "code" as a Status code (e2b-protocol.md §3.3).
StatusCode CodeOf(std::string_view code) {
  if (code == "not_found") return StatusCode::kNotFound;
  if (code == "invalid_argument") return StatusCode::kInvalidArgument;
  if (code == "deadline_exceeded") return StatusCode::kDeadlineExceeded;
  if (code == "permission_denied") return StatusCode::kPermissionDenied;
  if (code == "unauthenticated") return StatusCode::kUnauthenticated;
  if (code == "unavailable") return StatusCode::kUnavailable;
  if (code == "failed_precondition") return StatusCode::kFailedPrecondition;
  if (code == "internal") return StatusCode::kInternal;
  return StatusCode::kUnknown;
}

}  // namespace

Result<std::unique_ptr<EnvdProcess>> EnvdProcess::Connect(EnvdTarget target) {
  ASSIGN_OR_RETURN(auto http, net::HttpClient::ForAddress(target.gateway));
  return std::unique_ptr<EnvdProcess>(new EnvdProcess(std::move(target), std::move(http)));
}

net::ClientRequest EnvdProcess::Request(std::string method, std::string_view content_type) const {
  net::ClientRequest req{.method = "POST", .target = "/process.Process/" + method};
  req.headers.Set("Content-Type", content_type);
  req.headers.Set("Connect-Protocol-Version", "1");
  req.headers.Set("E2b-Sandbox-Id", target_.sandbox_id);
  req.headers.Set("E2b-Sandbox-Port", std::to_string(envd::kEnvdPort));
  req.headers.Set("Authorization", "Basic " + base::Base64Encode(target_.user + ":"));
  if (!target_.token.empty()) req.headers.Set("X-Access-Token", target_.token);
  req.timeout = std::chrono::seconds(30);
  return req;
}

Status EnvdProcess::HttpFailure(int status, std::string_view body) const {
  auto j = api::ParseJson(body);
  std::string message =
      j.ok() ? api::StringField(*j, "message", std::string(body)) : std::string(body);
  StatusCode code = status == 404 || status == 502 ? StatusCode::kNotFound
                    : j.ok() && j->is_object()     ? CodeOf(api::StringField(*j, "code"))
                                                   : StatusCode::kUnknown;
  return Status(code, fmt::format("sandbox {}: {} ({})", target_.sandbox_id, message, status));
}

Status EnvdProcess::Unary(std::string method, const api::Json& body) {
  net::ClientRequest req = Request(std::move(method), "application/json");
  req.body = api::DumpJson(body);
  auto resp = http_->Do(req);
  if (!resp.ok()) return resp.status();
  if (resp->status != 200) return HttpFailure(resp->status, resp->body);
  return Status::Ok();
}

Status EnvdProcess::SendInput(uint32_t pid, std::string_view bytes, bool pty) {
  return Unary("SendInput", {{"process", {{"pid", pid}}},
                             {"input", {{pty ? "pty" : "stdin", base::Base64Encode(bytes)}}}});
}

Status EnvdProcess::CloseStdin(uint32_t pid) {
  return Unary("CloseStdin", {{"process", {{"pid", pid}}}});
}

Status EnvdProcess::Resize(uint32_t pid, TerminalSize size) {
  return Unary("Update", {{"process", {{"pid", pid}}},
                          {"pty", {{"size", {{"cols", size.cols}, {"rows", size.rows}}}}}});
}

Status EnvdProcess::Kill(uint32_t pid) {
  return Unary("SendSignal", {{"process", {{"pid", pid}}}, {"signal", "SIGNAL_SIGKILL"}});
}

Result<int> EnvdProcess::Run(const StartOptions& options, const Handlers& handlers) {
  api::Json start = {{"process", options.process}};
  if (options.pty) {
    start["pty"] = {{"size", {{"cols", options.pty->cols}, {"rows", options.pty->rows}}}};
  } else {
    start["stdin"] = options.stdin;
  }
  net::ClientRequest req = Request("Start", "application/connect+json");
  req.headers.Set("Keepalive-Ping-Interval", std::to_string(options.keepalive.count()));
  req.body = envd::EncodeEnvelope(envd::kEnvelopeMessage, api::DumpJson(start));

  int status = 0;
  std::string error_body;
  envd::EnvelopeReader reader(kMaxMessage);
  std::optional<int> exit_code;
  Status failure;
  auto on_data = [&](std::string_view data) {
    if (status != 200) {
      if (error_body.size() < (64 << 10)) error_body.append(data);
      return true;
    }
    reader.Feed(data);
    for (;;) {
      if (handlers.keep_going && !handlers.keep_going()) {
        failure = CancelledError("stopped");
        return false;
      }
      auto next = reader.Next();
      if (!next.ok()) {
        failure = next.status();
        return false;
      }
      if (!*next) return true;
      auto msg = api::ParseJson((*next)->payload);
      if (!msg.ok() || !msg->is_object()) {
        failure = DataLossError("envd sent a message that is not JSON");
        return false;
      }
      if ((*next)->flags & envd::kEnvelopeEndStream) {
        if (msg->contains("error")) {
          const api::Json& e = (*msg)["error"];
          failure = Status(CodeOf(api::StringField(e, "code")),
                           fmt::format("envd: {}: {}", api::StringField(e, "code", "unknown"),
                                       api::StringField(e, "message")));
        }
        return false;
      }
      const api::Json& event = (*msg)["event"];
      if (!event.is_object()) continue;
      if (event.contains("start") && event["start"].is_object()) {
        if (handlers.on_start) handlers.on_start(event["start"].value("pid", 0u));
      } else if (event.contains("data") && event["data"].is_object()) {
        for (const auto& item : event["data"].items()) {
          if (!item.value().is_string()) continue;
          auto bytes = base::Base64Decode(item.value().get<std::string>());
          if (bytes && handlers.on_data) handlers.on_data(item.key(), *bytes);
        }
      } else if (event.contains("end") && event["end"].is_object()) {
        const api::Json& end = event["end"];
        // proto3 JSON leaves out a zero exit code; a process ended by a signal has none.
        exit_code = end.contains("exitCode")     ? end["exitCode"].get<int>()
                    : end.value("exited", false) ? 0
                                                 : 128 + 9;
      }
    }
  };
  auto resp = http_->DoStreaming(
      req,
      [&](const net::Response& head) {
        status = head.status;
        return true;
      },
      on_data);
  if (status != 0 && status != 200) return HttpFailure(status, error_body);
  if (!failure.ok() && !exit_code) return failure;
  if (!resp.ok() && !exit_code) {
    return Status(resp.status().code(), fmt::format("cannot reach the gateway at {}: {}",
                                                    target_.gateway, resp.status().message()));
  }
  if (!exit_code) return UnavailableError("the command's stream ended without its exit");
  return *exit_code;
}

}  // namespace warren::cli
