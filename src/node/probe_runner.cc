#include "node/probe_runner.h"

#include <fmt/format.h>

#include "api/json.h"
#include "base/encoding.h"
#include "envd/envelope.h"
#include "net/http_client.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

// envd's events carry output in chunks of at most 32 KiB; a bigger frame is not envd's.
constexpr size_t kMaxEnvelope = 1 << 20;
// Time beyond the probe's own timeout for envd to report the kill it did at the deadline.
constexpr auto kEnvdGrace = 2s;

std::string Seconds(std::chrono::milliseconds d) {
  return fmt::format("{}s", (d.count() + 999) / 1000);
}

// The exec probe's command through envd's process service; its output (stdout then stderr
// interleaved as they came) is kept up to kMaxProbeOutput.
ProbeOutcome RunExec(const ProbeAction& action, const ProbeTarget& target) {
  if (!target.envd) return {false, "the sandbox's envd is gone"};
  api::Json process = {
      {"cmd", action.command.front()},
      {"args", std::vector<std::string>(action.command.begin() + 1, action.command.end())}};
  net::ClientRequest req;
  req.method = "POST";
  req.target = "/process.Process/Start";
  req.headers.Set("Content-Type", "application/connect+json");
  // envd kills the command's process group at this deadline, whether or not we still listen.
  req.headers.Set("Connect-Timeout-Ms", std::to_string(action.timeout.count()));
  req.body =
      envd::EncodeEnvelope(envd::kEnvelopeMessage, api::DumpJson(api::Json{{"process", process}}));
  req.timeout = action.timeout + kEnvdGrace;

  int status = 0;
  std::string output;
  std::optional<int> exit_code;
  std::string stream_error;
  envd::EnvelopeReader reader(kMaxEnvelope);
  auto on_data = [&](std::string_view data) {
    if (status != 200) {
      if (output.size() < kMaxProbeOutput) output.append(data);
      return true;
    }
    reader.Feed(data);
    for (;;) {
      auto next = reader.Next();
      if (!next.ok()) {
        stream_error = next.status().message();
        return false;
      }
      if (!*next) return true;
      auto msg = api::ParseJson((*next)->payload);
      if (!msg.ok() || !msg->is_object()) {
        stream_error = "envd sent a message that is not JSON";
        return false;
      }
      if ((*next)->flags & envd::kEnvelopeEndStream) {
        if (msg->contains("error") && (*msg)["error"].is_object()) {
          const api::Json& e = (*msg)["error"];
          stream_error = e.value("code", "") == "deadline_exceeded"
                             ? fmt::format("timed out after {}", Seconds(action.timeout))
                             : fmt::format("envd: {}", e.value("message", "error"));
        }
        return false;
      }
      const api::Json& event = (*msg)["event"];
      if (!event.is_object()) continue;
      if (event.contains("data") && event["data"].is_object()) {
        for (const auto& item : event["data"].items()) {
          if (!item.value().is_string() || output.size() >= kMaxProbeOutput) continue;
          if (auto bytes = base::Base64Decode(item.value().get<std::string>())) output += *bytes;
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
  auto resp = target.envd->DoStreaming(
      std::move(req),
      [&](const net::Response& head) {
        status = head.status;
        return true;
      },
      on_data);
  if (status != 0 && status != 200) {
    return {false, TruncateProbeOutput(fmt::format("envd answered HTTP {}: {}", status, output))};
  }
  if (!stream_error.empty() && (!exit_code || stream_error.starts_with("timed out"))) {
    return {false,
            TruncateProbeOutput(output.empty() ? stream_error : stream_error + ": " + output)};
  }
  if (!exit_code) {
    if (!resp.ok()) return {false, TruncateProbeOutput(resp.status().message())};
    return {false, "the probe's command ended without an exit status"};
  }
  if (*exit_code == 0) return {true, TruncateProbeOutput(output), exit_code};
  return {false,
          TruncateProbeOutput(
              output.empty() ? fmt::format("the command exited with code {}", *exit_code) : output),
          exit_code};
}

ProbeOutcome RunHttpGet(const ProbeAction& action, const ProbeTarget& target) {
  const uint16_t port = action.port;
  auto dial = target.dial;
  // A connection per run, as a kubelet's: a probe must see a server that can still accept.
  auto client = net::HttpClient::WithDialer(
      [dial, port](std::chrono::milliseconds timeout) { return dial(port, timeout); },
      fmt::format("127.0.0.1:{}", port));
  net::ClientRequest req;
  req.target = action.path.empty() ? "/" : action.path;
  req.headers.Set("User-Agent", "warren-probe/1.0");
  req.headers.Set("Accept", "*/*");
  for (const api::HttpHeader& h : action.headers) req.headers.Set(h.name, h.value);
  req.timeout = action.timeout;
  req.max_response_bytes = 64 << 10;
  auto resp = client->Do(req);
  if (!resp.ok()) {
    if (resp.status().code() == StatusCode::kDeadlineExceeded) {
      return {false, fmt::format("GET {} on port {}: timed out after {}", req.target, port,
                                 Seconds(action.timeout))};
    }
    return {false, TruncateProbeOutput(fmt::format("GET {} on port {}: {}", req.target, port,
                                                   resp.status().message()))};
  }
  // Kubernetes: 200 <= status < 400 is success.
  const bool ok = resp->status >= 200 && resp->status < 400;
  if (ok) return {true, TruncateProbeOutput(resp->body)};
  return {false, TruncateProbeOutput(fmt::format("HTTP probe failed with statuscode: {}: {}",
                                                 resp->status, resp->body))};
}

ProbeOutcome RunTcpSocket(const ProbeAction& action, const ProbeTarget& target) {
  auto fd = target.dial(action.port, action.timeout);
  if (!fd.ok()) {
    return {false, TruncateProbeOutput(
                       fmt::format("dial port {}: {}", action.port, fd.status().message()))};
  }
  return {true, fmt::format("port {} accepts connections", action.port)};
}

}  // namespace

Result<ProbeAction> ResolveProbeAction(const api::Probe& probe, const api::Container* container) {
  ProbeAction a;
  a.timeout = std::chrono::seconds(api::ResolvedTimings(probe).timeout_seconds);
  const api::IntOrString* port = nullptr;
  if (probe.exec) {
    a.type = ProbeAction::Type::kExec;
    a.command = probe.exec->command;
    if (a.command.empty()) return InvalidArgumentError("exec.command is empty");
    return a;
  }
  if (probe.http_get) {
    a.type = ProbeAction::Type::kHttpGet;
    a.path = probe.http_get->path.empty() ? "/" : probe.http_get->path;
    a.headers = probe.http_get->http_headers;
    port = &probe.http_get->port;
  } else if (probe.tcp_socket) {
    a.type = ProbeAction::Type::kTcpSocket;
    port = &probe.tcp_socket->port;
  } else {
    return InvalidArgumentError("the probe has no exec, httpGet or tcpSocket");
  }
  if (!port->is_string) {
    if (port->int_value < 1 || port->int_value > 65535) {
      return InvalidArgumentError(fmt::format("port {} is out of range", port->int_value));
    }
    a.port = static_cast<uint16_t>(port->int_value);
    return a;
  }
  if (container != nullptr) {
    for (const api::ContainerPort& p : container->ports) {
      if (p.name == port->str_value && p.container_port >= 1 && p.container_port <= 65535) {
        a.port = static_cast<uint16_t>(p.container_port);
        return a;
      }
    }
  }
  return InvalidArgumentError(
      fmt::format("port \"{}\" is not a named port of the container", port->str_value));
}

ProbeOutcome RunProbe(const ProbeAction& action, const ProbeTarget& target) {
  switch (action.type) {
    case ProbeAction::Type::kExec:
      return RunExec(action, target);
    case ProbeAction::Type::kHttpGet:
      return RunHttpGet(action, target);
    case ProbeAction::Type::kTcpSocket:
      return RunTcpSocket(action, target);
  }
  return {false, "unknown probe type"};
}

}  // namespace warren::node
