// warren-envd: the E2B-compatible agent inside every sandbox. It usually runs as pid 1: it
// serves the envd protocol on port 49983, reaps every orphan, forwards SIGTERM/SIGINT to what it
// runs, and supervises the template's own command (given after `--`).

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <thread>

#include "base/log.h"
#include "base/strings.h"
#include "envd/command_supervisor.h"
#include "envd/envd_server.h"
#include "envd/version.h"
#include "net/http_server.h"
#include "os/user_db.h"
#include "trace/route_spans.h"
#include "trace/span_log.h"
#include "trace/tracer.h"

namespace {

using namespace warren;

std::optional<std::string> EnvOr(const std::string& flag_value, const char* env_name) {
  if (!flag_value.empty()) return flag_value;
  const char* v = getenv(env_name);
  if (v && *v) return std::string(v);
  return std::nullopt;
}

// The node secret and the birth token reach pid 1 through its environment, which root in the
// sandbox could read back from /proc/1/environ: once read, their values are overwritten there
// (the kernel shows the original strings' memory, so unsetenv would not hide them).
void ScrubSecretsFromEnviron() {
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    for (std::string_view name : {"WARREN_ENVD_NODE_SECRET=", "WARREN_ENVD_ACCESS_TOKEN="}) {
      if (kv.starts_with(name)) std::memset(*e + name.size(), 'x', kv.size() - name.size());
    }
  }
}

// With --inherit-env, envd's own environment (what the node agent gave pid 1: the image's and
// the template's env vars) becomes the sandbox's env vars, minus envd's own settings.
std::map<std::string, std::string> InheritedEnv() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string_view key = kv.substr(0, eq);
    if (key.starts_with("WARREN_ENVD_")) continue;
    env[std::string(key)] = std::string(kv.substr(eq + 1));
  }
  return env;
}

// The exit code a shell would report for the template command: its own code, or 128 + the
// signal that killed it.
int ShellExitCode(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"warren-envd: the E2B-compatible agent inside a Warren sandbox"};
  std::string listen = fmt::format("0.0.0.0:{}", envd::kEnvdPort);
  std::string default_user = "root";
  std::string default_workdir;
  std::string access_token;
  std::string node_secret;
  std::string log_file;
  std::string audit_file;
  std::string span_file;
  std::string init_dir;
  std::string log_level = "info";
  std::string command_user = "root";
  int threads = 2;
  int blocking_threads = 128;
  std::vector<std::string> command;
  bool version = false;
  bool inherit_env = false;
  bool exit_with_command = false;
  app.add_option("--listen", listen, "address:port to serve on");
  app.add_option("--default-user", default_user, "user of requests that name none (until /init)");
  app.add_option("--default-workdir", default_workdir, "cwd and base of empty paths");
  app.add_option("--access-token", access_token,
                 "require X-Access-Token (also WARREN_ENVD_ACCESS_TOKEN); usually set by /init");
  app.add_option("--node-secret", node_secret,
                 "secret of the node agent for POST /reset (also WARREN_ENVD_NODE_SECRET)");
  app.add_option("--command-log", log_file, "file that keeps the template command's output");
  app.add_option("--audit-log", audit_file,
                 "file where commands started and files written or removed are recorded");
  app.add_option("--span-log", span_file,
                 "file where spans of requests that carry a sampled traceparent are written "
                 "(OTLP/JSON, one per line) for the node agent to forward; default: no spans");
  app.add_option("--init-dir", init_dir,
                 "the node agent's init channel: /init bodies it writes there without a request "
                 "(src/envd/init_channel.h)");
  app.add_option("--command-user", command_user, "user the template command runs as");
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off");
  app.add_option("--threads", threads, "HTTP loop threads");
  app.add_option("--blocking-threads", blocking_threads, "threads for blocking handlers");
  app.add_flag("--version", version, "print the envd protocol version and exit");
  app.add_flag("--inherit-env", inherit_env,
               "envd's environment (minus WARREN_ENVD_*) is the sandbox's env vars: the template "
               "command and every process get it");
  app.add_flag("--exit-with-command", exit_with_command,
               "stop when the template command ends and exit with its status (127 when it "
               "could not be found, 126 when it could not start), so the sandbox ends with it");
  app.add_option("command", command, "the template's own command, after --");
  CLI11_PARSE(app, argc, argv);
  if (version) {
    std::cout << envd::kEnvdVersion << "\n";
    return 0;
  }
  base::SetLogLevel(log_level);
  auto log = base::Logger("envd");

  // Files created for users get 0644 and directories 0755, as E2B's tests expect.
  umask(022);
  // Orphans of the processes we start become ours to reap even when we are not pid 1.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // Termination signals are taken by one thread (sigwait); every thread inherits this mask, and
  // children get a clean one (os::Spawn).
  // As pid 1 of a pid namespace the kernel drops every signal whose disposition is SIG_DFL, even
  // a blocked one, so each also gets a handler (never run: sigwait takes them first).
  sigset_t wanted;
  sigemptyset(&wanted);
  struct sigaction noop {};
  noop.sa_handler = [](int) {};
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
    sigaddset(&wanted, s);
    sigaction(s, &noop, nullptr);
  }
  pthread_sigmask(SIG_BLOCK, &wanted, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto colon = listen.rfind(':');
  auto port =
      colon == std::string::npos ? std::nullopt : base::ParseUint64(listen.substr(colon + 1));
  if (!port || *port > 65535) {
    std::cerr << "warren-envd: --listen must be address:port, got '" << listen << "'\n";
    return 2;
  }

  envd::EnvdOptions options;
  options.defaults.default_user = default_user;
  if (!default_workdir.empty()) options.defaults.default_workdir = default_workdir;
  options.defaults.access_token = EnvOr(access_token, "WARREN_ENVD_ACCESS_TOKEN");
  options.defaults.reset_secret = EnvOr(node_secret, "WARREN_ENVD_NODE_SECRET");
  if (inherit_env) options.defaults.env_vars = InheritedEnv();
  ScrubSecretsFromEnviron();
  options.log_file = log_file;
  options.audit_file = audit_file;
  envd::Envd agent(options);
  if (!init_dir.empty()) {
    auto channel = envd::InitChannelReader::Open(init_dir);
    if (!channel.ok()) {
      std::cerr << "warren-envd: --init-dir: " << channel.status().ToString() << "\n";
      return 2;
    }
    agent.FollowInitChannel(std::move(channel).value());
  }

  net::ServerOptions server_options;
  server_options.address = listen.substr(0, colon);
  server_options.port = static_cast<uint16_t>(*port);
  server_options.loop_threads = threads;
  server_options.blocking_threads = blocking_threads;
  // Every request comes from the sandbox's one owner, through the gateway: no key to share
  // threads fairly between, so none is capped below the pool.
  server_options.blocking_threads_per_key = blocking_threads;
  server_options.max_body_bytes = 16 * 1024 * 1024;
  net::Router router = agent.BuildRouter();
  // Spans only for requests whose caller traces them (sampling 0 starts no trace of its own):
  // the node's /init and SDK calls relayed by a tracing gateway.
  std::unique_ptr<trace::SpanLog> span_log;
  if (!span_file.empty()) {
    auto opened = trace::SpanLog::Open(span_file);
    if (!opened.ok()) {
      std::cerr << "warren-envd: --span-log: " << opened.status().ToString() << "\n";
      return 2;
    }
    span_log = std::move(opened).value();
    trace::Install(*span_log, {.sampling_ratio = 0.0});
    trace::TraceRoutes(router, "envd");
  }
  auto server = net::HttpServer::Start(server_options, std::move(router));
  if (!server.ok()) {
    std::cerr << "warren-envd: " << server.status().ToString() << "\n";
    return 1;
  }
  log->info("serving addr={}:{} version={}", server_options.address, (*server)->port(),
            envd::kEnvdVersion);
  // Tests and the node agent read the bound port from here when they asked for port 0.
  std::cout << "warren-envd listening on " << server_options.address << ":" << (*server)->port()
            << std::endl;

  envd::CommandSupervisor supervisor(agent.command_log());
  std::atomic<bool> command_ended{false};
  std::thread command_watcher;
  if (!command.empty()) {
    os::UserDb users;
    auto user = users.LookupUser(command_user);
    if (!user.ok()) {
      std::cerr << "warren-envd: --command-user: " << user.status().ToString() << "\n";
      return 2;
    }
    os::SpawnOptions spawn;
    spawn.argv = command;
    std::map<std::string, std::string> env = options.defaults.env_vars;
    const char* path = getenv("PATH");
    env["PATH"] = path ? path : "/usr/local/bin:/usr/bin:/bin";
    env["HOME"] = user->home;
    env["USER"] = user->name;
    env["LOGNAME"] = user->name;
    for (const auto& [k, v] : env) spawn.env.push_back(k + "=" + v);
    spawn.cwd = default_workdir.empty() ? "/" : default_workdir;
    spawn.credentials = os::Credentials{user->uid, user->gid, user->groups};
    if (auto s = supervisor.Start(spawn); !s.ok()) {
      log->error("template command failed to start error=\"{}\"", s.ToString());
      if (exit_with_command) {
        (*server)->Shutdown(std::chrono::milliseconds(0));
        return s.code() == StatusCode::kNotFound ? 127 : 126;
      }
    } else if (exit_with_command) {
      // The command's end wakes the sigwait below like a SIGTERM would.
      command_watcher = std::thread([&supervisor, &command_ended] {
        while (!supervisor.WaitExited(std::chrono::hours(1))) {
        }
        command_ended = true;
        kill(getpid(), SIGTERM);
      });
    }
  }

  int sig = 0;
  sigwait(&wanted, &sig);
  if (command_ended) {
    log->info("template command ended, stopping");
  } else {
    log->info("signal={} forwarding and shutting down", sig);
  }
  const int forward = sig == SIGINT ? SIGINT : SIGTERM;
  supervisor.Signal(forward);
  for (const auto& p : agent.processes().List()) {
    kill(-static_cast<pid_t>(p.pid), forward);
  }
  supervisor.WaitExited(std::chrono::seconds(5));
  if (command_watcher.joinable()) {
    supervisor.Signal(SIGKILL);  // one that ignored SIGTERM; the watcher ends with it
    command_watcher.join();
  }
  // The command's last lines may still be in its pipes: the sandbox's log must have them before
  // pid 1 exits and the node reports the command's end.
  const bool drained = supervisor.WaitOutputDrained(std::chrono::seconds(1));
  (*server)->Shutdown(std::chrono::milliseconds(500));
  const int code = command_ended ? ShellExitCode(supervisor.wait_status().value_or(0)) : 0;
  // A process the command left behind still holds its output open, so the copying thread still
  // writes into the log this frame owns: end without running destructors under it.
  if (!drained) {
    std::fflush(nullptr);
    _exit(code);
  }
  return code;
}
