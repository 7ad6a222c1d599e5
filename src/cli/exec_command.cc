// `warren exec SANDBOX [-u USER] [-w DIR] [-e K=V]... -- CMD [ARG...]`: runs a command in a
// sandbox through the gateway and envd (process.Process/Start, the E2B SDK's own call),
// streams its stdout and stderr as they come, and exits with its exit code — as `kubectl exec`.
// A paused sandbox is resumed first (E2B connect).

#include <fmt/format.h>

#include <iostream>

#include "api/json.h"
#include "api/kinds.h"
#include "api/status_object.h"
#include "base/encoding.h"
#include "base/strings.h"
#include "cli/api_client.h"
#include "cli/app.h"
#include "envd/envelope.h"
#include "envd/version.h"
#include "net/http_client.h"

namespace warren::cli {
namespace {

constexpr size_t kMaxMessage = 16 << 20;

struct ExecFlags {
  std::string sandbox;
  std::vector<std::string> command;
  std::string user = "user";
  std::string cwd;
  std::vector<std::string> env;
  std::string sandbox_url;
};

// The gateway: --sandbox-url, else $E2B_SANDBOX_URL, else the server's host at its port + 1
// (where `warren server` puts it).
std::string GatewayAddress(const App& app, const ExecFlags& f) {
  if (!f.sandbox_url.empty()) return f.sandbox_url;
  if (const char* env = std::getenv("E2B_SANDBOX_URL"); env && *env) return env;
  std::string server = app.ServerAddress();
  std::string_view s = server;
  if (s.starts_with("http://")) s.remove_prefix(7);
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos) return std::string(s) + ":7781";
  auto port = base::ParseInt64(s.substr(colon + 1));
  return fmt::format("{}:{}", s.substr(0, colon), port ? *port + 1 : 7781);
}

// The sandbox id of SANDBOX: a Sandbox's name in the namespace, or an id itself.
Result<std::string> SandboxIdOf(App& app, const std::string& sandbox) {
  ASSIGN_OR_RETURN(ApiClient * client, app.Client());
  auto object = client->Get(api::SandboxKind(), app.Namespace(), sandbox);
  if (object.ok()) {
    auto labels = (*object)["metadata"].value("labels", api::Json::object());
    std::string id = labels.value("agents.kruise.io/sandbox-id", "");
    if (id.empty()) {
      return FailedPreconditionError(fmt::format("Sandbox {} has no sandbox id yet", sandbox));
    }
    return id;
  }
  if (object.status().code() != StatusCode::kNotFound) return object.status();
  return sandbox;  // an E2B sandbox id
}

void RunExec(App& app, const ExecFlags& f) {
  if (f.command.empty()) {
    return app.Fail(InvalidArgumentError("no command: warren exec SANDBOX -- CMD [ARG...]"));
  }
  api::Json envs = api::Json::object();
  for (const auto& kv : f.env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return app.Fail(InvalidArgumentError(fmt::format("--env \"{}\" is not KEY=VALUE", kv)));
    }
    envs[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto id = SandboxIdOf(app, f.sandbox);
  if (!id.ok()) return app.FailFromServer(id.status());

  // The sandbox's envd token, as E2B's connect gives it to its owner (a paused sandbox is
  // resumed, as the SDK's connect does; a timer is only ever extended, here by at most 1 s).
  auto api_http = net::HttpClient::ForAddress(app.ServerAddress());
  if (!api_http.ok()) return app.Fail(api_http.status());
  net::ClientRequest info{.method = "POST",
                          .target = "/sandboxes/" + base::PercentEncode(*id) + "/connect"};
  info.headers.Set("X-API-Key", app.ApiKey());
  info.headers.Set("Content-Type", "application/json");
  info.body = R"({"timeout":1})";
  info.timeout = std::chrono::seconds(60);
  auto got = (*api_http)->Do(info);
  if (!got.ok()) return app.Fail(UnreachableError(app.ServerAddress(), got.status()));
  if (got->status != 200 && got->status != 201) {
    auto j = api::ParseJson(got->body);
    std::string message = j.ok() && j->is_object() ? j->value("message", got->body) : got->body;
    return app.Fail(Status(got->status == 404 ? StatusCode::kNotFound : StatusCode::kUnknown,
                           fmt::format("sandbox {}: {}", *id, message)));
  }
  auto detail = api::ParseJson(got->body);
  if (!detail.ok()) return app.Fail(detail.status());
  std::string token = (*detail)["envdAccessToken"].is_string()
                          ? (*detail)["envdAccessToken"].get<std::string>()
                          : "";

  std::string gateway = GatewayAddress(app, f);
  auto http = net::HttpClient::ForAddress(gateway);
  if (!http.ok()) return app.Fail(http.status());
  api::Json process = {{"cmd", f.command[0]},
                       {"args", std::vector<std::string>(f.command.begin() + 1, f.command.end())},
                       {"envs", envs}};
  if (!f.cwd.empty()) process["cwd"] = f.cwd;
  net::ClientRequest req{.method = "POST", .target = "/process.Process/Start"};
  req.headers.Set("Content-Type", "application/connect+json");
  req.headers.Set("Connect-Protocol-Version", "1");
  req.headers.Set("E2b-Sandbox-Id", *id);
  req.headers.Set("E2b-Sandbox-Port", std::to_string(envd::kEnvdPort));
  req.headers.Set("Authorization", "Basic " + base::Base64Encode(f.user + ":"));
  if (!token.empty()) req.headers.Set("X-Access-Token", token);
  req.body = envd::EncodeEnvelope(envd::kEnvelopeMessage,
                                  api::DumpJson({{"process", process}, {"stdin", false}}));
  req.timeout = std::chrono::seconds(30);

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
      auto next = reader.Next();
      if (!next.ok()) {
        failure = next.status();
        return false;
      }
      if (!*next) return true;
      auto msg = api::ParseJson((*next)->payload);
      if (!msg.ok()) {
        failure = DataLossError("envd sent a message that is not JSON");
        return false;
      }
      if ((*next)->flags & envd::kEnvelopeEndStream) {
        if (msg->contains("error")) {
          const api::Json& e = (*msg)["error"];
          failure = UnknownError(
              fmt::format("envd: {}: {}", e.value("code", "unknown"), e.value("message", "")));
        }
        return false;
      }
      const api::Json& event = (*msg)["event"];
      if (event.contains("data")) {
        const api::Json& d = event["data"];
        for (auto [field, stream] :
             {std::pair{"stdout", &app.out()}, std::pair{"stderr", &app.err()}}) {
          if (!d.contains(field)) continue;
          auto bytes = base::Base64Decode(d[field].get<std::string>());
          if (bytes) {
            *stream << *bytes;
            stream->flush();
          }
        }
      } else if (event.contains("end")) {
        const api::Json& end = event["end"];
        // proto3 JSON leaves out a zero exit code; a process ended by a signal has none.
        exit_code = end.contains("exitCode")     ? end["exitCode"].get<int>()
                    : end.value("exited", false) ? 0
                                                 : 128 + 9;
      }
    }
  };
  auto resp = (*http)->DoStreaming(
      req,
      [&](const net::Response& head) {
        status = head.status;
        return true;
      },
      on_data);
  if (!resp.ok() && !exit_code) {
    return app.Fail(Status(resp.status().code(), fmt::format("cannot reach the gateway at {}: {}",
                                                             gateway, resp.status().message())));
  }
  if (status != 200) {
    auto j = api::ParseJson(error_body);
    std::string message = j.ok() && j->is_object() ? j->value("message", error_body) : error_body;
    return app.Fail(
        Status(status == 404 || status == 502 ? StatusCode::kNotFound : StatusCode::kUnknown,
               fmt::format("sandbox {}: {} ({})", *id, message, status)));
  }
  if (!failure.ok() && !exit_code) return app.Fail(failure);
  if (!exit_code) return app.Fail(UnavailableError("the command's stream ended without its exit"));
  app.SetExitCode(*exit_code);
}

}  // namespace

void AddExecCommand(App& app) {
  auto f = std::make_shared<ExecFlags>();
  auto* cmd = app.cli().add_subcommand(
      "exec", "Run a command in a sandbox: warren exec SANDBOX -- CMD [ARG...] (exit code is its)");
  cmd->add_option("sandbox", f->sandbox, "a Sandbox's name (in the namespace) or a sandbox id")
      ->required();
  cmd->add_option("command", f->command, "the command and its arguments (after --)");
  cmd->add_option("--user,-u", f->user, "the user to run as")->capture_default_str();
  cmd->add_option("--workdir,-w", f->cwd, "the working directory (default: the user's home)");
  // One value per flag, so `--` after it starts the command.
  cmd->add_option("--env,-e", f->env, "KEY=VALUE for the command's environment (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--sandbox-url", f->sandbox_url,
                  "the gateway (default: $E2B_SANDBOX_URL, else the server's port + 1)");
  cmd->callback([&app, f] { RunExec(app, *f); });
}

}  // namespace warren::cli
