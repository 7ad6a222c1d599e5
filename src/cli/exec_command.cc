// `warren exec [-i] [-t] SANDBOX [-u USER] [-w DIR] [-e K=V]... -- CMD [ARG...]`: runs a command
// in a sandbox through the gateway and envd (process.Process/Start, the E2B SDK's own call),
// streams its output as it comes, and exits with its exit code — as `kubectl exec`. A paused
// sandbox is resumed first (E2B connect).
//
// -t gives the command a PTY sized like the local terminal (80x24 when there is none) and
// follows the terminal's resizes; -i forwards stdin (to the PTY with -t, else to the command's
// stdin, closed at EOF). With both on a terminal, the terminal is raw for the session and put
// back however it ends; SIGINT/SIGTERM/SIGHUP end the command and exit with 128+signal.

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "api/json.h"
#include "api/kinds.h"
#include "base/encoding.h"
#include "base/strings.h"
#include "cli/api_client.h"
#include "cli/app.h"
#include "cli/envd_process.h"
#include "cli/exec_input.h"
#include "cli/signal_pipe.h"
#include "cli/terminal.h"
#include "net/http_client.h"

namespace warren::cli {
namespace {

struct ExecFlags {
  std::string sandbox;
  std::vector<std::string> command;
  std::string user = "user";
  std::string cwd;
  std::vector<std::string> env;
  std::string sandbox_url;
  bool stdin = false;
  bool tty = false;
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

// The sandbox's envd token, as E2B's connect gives it to its owner (a paused sandbox is
// resumed, as the SDK's connect does; a timer is only ever extended, here by at most 1 s).
Result<std::string> EnvdToken(App& app, const std::string& id) {
  ASSIGN_OR_RETURN(auto api_http, net::HttpClient::ForAddress(app.ServerAddress()));
  net::ClientRequest info{.method = "POST",
                          .target = "/sandboxes/" + base::PercentEncode(id) + "/connect"};
  info.headers.Set("X-API-Key", app.ApiKey());
  info.headers.Set("Content-Type", "application/json");
  info.body = R"({"timeout":1})";
  info.timeout = std::chrono::seconds(60);
  auto got = api_http->Do(info);
  if (!got.ok()) return UnreachableError(app.ServerAddress(), got.status());
  if (got->status != 200 && got->status != 201) {
    auto j = api::ParseJson(got->body);
    std::string message = j.ok() ? api::StringField(*j, "message", got->body) : got->body;
    return Status(got->status == 404 ? StatusCode::kNotFound : StatusCode::kUnknown,
                  fmt::format("sandbox {}: {}", id, message));
  }
  ASSIGN_OR_RETURN(api::Json detail, api::ParseJson(got->body));
  return detail["envdAccessToken"].is_string() ? detail["envdAccessToken"].get<std::string>()
                                               : std::string();
}

// Writes what the process printed, unbuffered: a PTY's echo and prompts must show at once.
std::function<void(std::string_view, std::string_view)> PrintTo(App& app) {
  return [&app](std::string_view stream, std::string_view bytes) {
    std::ostream& out = stream == "stderr" ? app.err() : app.out();
    out << bytes;
    out.flush();
  };
}

// -i and/or -t: the output stream on this thread, input and signals on the pump's.
Result<int> RunInteractive(App& app, const ExecFlags& f, EnvdProcess& process,
                           EnvdProcess::StartOptions start) {
  // Order matters for unwinding: the pump stops first, then the terminal is put back, then the
  // old handlers and signal mask return (a signal still pending is then handled as usual).
  BlockSignals blocked;
  ASSIGN_OR_RETURN(auto signals, SignalPipe::Install({SIGWINCH, SIGINT, SIGTERM, SIGHUP}));
  const int terminal_fd = ::isatty(STDIN_FILENO) ? STDIN_FILENO : STDOUT_FILENO;
  std::optional<RawTerminal> raw;
  if (f.tty) {
    start.pty = SizeOf(terminal_fd).value_or(TerminalSize{});
    const char* term = std::getenv("TERM");
    if (!start.process["envs"].contains("TERM")) {
      start.process["envs"]["TERM"] = term && *term ? term : "xterm-256color";
    }
    if (f.stdin && ::isatty(STDIN_FILENO)) {
      ASSIGN_OR_RETURN(RawTerminal entered, RawTerminal::Enter(STDIN_FILENO));
      raw.emplace(std::move(entered));
    }
  }
  start.stdin = f.stdin;
  // Short keepalives: a signal ends the stream within a second even when the command is quiet.
  start.keepalive = std::chrono::seconds(1);
  InputPump pump(process, *signals,
                 {.forward_stdin = f.stdin,
                  .pty = f.tty,
                  .stdin_fd = STDIN_FILENO,
                  .terminal_fd = terminal_fd});
  RETURN_IF_ERROR(pump.Start());
  auto code = process.Run(start, {.on_start = [&pump](uint32_t pid) { pump.SetPid(pid); },
                                  .on_data = PrintTo(app),
                                  .keep_going = [&pump] { return !pump.Terminated(); }});
  pump.Stop();
  if (auto signo = pump.Terminated()) return 128 + *signo;
  return code;
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
  auto token = EnvdToken(app, *id);
  if (!token.ok()) return app.Fail(token.status());
  auto process = EnvdProcess::Connect(
      {.gateway = GatewayAddress(app, f), .sandbox_id = *id, .token = *token, .user = f.user});
  if (!process.ok()) return app.Fail(process.status());

  EnvdProcess::StartOptions start;
  start.process = {{"cmd", f.command[0]},
                   {"args", std::vector<std::string>(f.command.begin() + 1, f.command.end())},
                   {"envs", envs}};
  if (!f.cwd.empty()) start.process["cwd"] = f.cwd;
  Result<int> code = f.stdin || f.tty ? RunInteractive(app, f, **process, std::move(start))
                                      : (*process)->Run(start, {.on_data = PrintTo(app)});
  if (!code.ok()) return app.Fail(code.status());
  app.SetExitCode(*code);
}

}  // namespace

void AddExecCommand(App& app) {
  auto f = std::make_shared<ExecFlags>();
  auto* cmd = app.cli().add_subcommand(
      "exec",
      "Run a command in a sandbox: warren exec [-it] SANDBOX -- CMD [ARG...] (exit code is its)");
  cmd->add_option("sandbox", f->sandbox, "a Sandbox's name (in the namespace) or a sandbox id")
      ->required();
  cmd->add_option("command", f->command, "the command and its arguments (after --)");
  cmd->add_flag("--stdin,-i", f->stdin, "pass stdin to the command");
  cmd->add_flag("--tty,-t", f->tty, "run the command on a PTY (with -i: the terminal goes raw)");
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
