#include "processes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/json.h"
#include "base/check.h"
#include "base/testing/free_port.h"

extern char** environ;

namespace warren::pool_testing {
namespace {

using namespace std::chrono_literals;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

Child::Child(const std::vector<std::string>& argv, const std::string& log_path,
             const std::map<std::string, std::string>& env) {
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    if (!env.contains(entry.substr(0, entry.find('=')))) envs.push_back(entry);
  }
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> cenv;
  for (auto& e : envs) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  CHECK(log >= 0);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();
  pid_ = fork();
  CHECK(pid_ >= 0);
  if (pid_ == 0) {
    // A test or bench that dies without its destructors (a failed CHECK aborts) takes its
    // server with it instead of leaving it running.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(devnull, 0);
    dup2(log, 1);
    dup2(log, 2);
    setpgid(0, 0);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(log);
  close(devnull);
}

Child::~Child() {
  if (running()) Signal(SIGKILL);
  Wait(10s);
}

bool Child::running() {
  if (reaped_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

void Child::Signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}

int Child::Wait(std::chrono::milliseconds timeout) {
  if (reaped_) return 0;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(10ms);
  }
  reaped_ = true;
  return status;
}

WarrenServer::WarrenServer(std::string data_dir) {
  if (data_dir.empty()) {
    temp_ = std::make_unique<store::testing::TempDir>();
    data_dir = temp_->path();
  }
  data_dir_ = data_dir;
}

const char* WarrenServer::Binary() {
  // A bench can run an older build beside this one (A/B of a change on the same host).
  const char* other = getenv("WARREN_SERVER_BINARY");
  return other != nullptr && *other != '\0' ? other : WARREN_BIN;
}

WarrenServer::~WarrenServer() {
  // With a node agent, sandboxes outlive the server: whatever the test did (or failed to do),
  // bring the server back if it is down and delete everything before stopping it.
  if (node_agent_ && starts_ > 0) {
    if (!child_) Start(last_args_);
    if (!DeleteEverything(std::chrono::minutes(3))) {
      fprintf(stderr, "warning: sandboxes of %s may still run\n", data_dir_.c_str());
    }
  }
  Stop();
}

void WarrenServer::Start(const std::vector<std::string>& extra_args) {
  CHECK(!child_);
  if (admin_key_.empty()) {
    // The admin key, made the way run.sh makes it; http() and Cli() send it.
    auto [code, out] = Cli(
        {"apikey", "bootstrap", "--data-dir", data_dir_, "--config", data_dir_ + "/cli-config"});
    CHECK_MSG(code == 0, "apikey bootstrap failed: " << out);
    std::ifstream f(data_dir_ + "/admin-key");
    CHECK_MSG(f >> admin_key_, "no admin key in " << data_dir_);
  }
  std::string port_file = data_dir_ + "/port";
  unlink(port_file.c_str());
  std::vector<std::string> argv = {
      Binary(),      "server",  "--port",      "0",    "--data-dir",        data_dir_,
      "--port-file", port_file, "--log-level", "info", "--sandbox-network", "none"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  last_args_ = extra_args;
  // No node agent unless the test asks for one (WARREN_NODE_AGENT=on in its environment): a
  // server killed by a test leaves its sandboxes running (to be adopted), which would leak.
  std::map<std::string, std::string> env;
  if (node_agent_) {
    env["WARREN_NODE_AGENT"] = "on";
  } else if (getenv("WARREN_NODE_AGENT") == nullptr) {
    env["WARREN_NODE_AGENT"] = "off";
  }
  child_ = std::make_unique<Child>(argv, data_dir_ + "/server.log", env);
  ++starts_;
  port_ = 0;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream f(port_file);
    int port = 0;
    if (f >> port && port > 0) {
      port_ = static_cast<uint16_t>(port);
      break;
    }
    CHECK_MSG(child_->running(), "warren server exited during startup:\n" << log());
    std::this_thread::sleep_for(20ms);
  }
  CHECK_MSG(port_ != 0, "warren server did not write its port file:\n" << log());
  auto client = net::HttpClient::ForAddress(address());
  CHECK_OK(client.status());
  http_ = std::move(*client);
  http_->SetDefaultHeader("Authorization", "Bearer " + admin_key_);
  bool ready = Eventually(
      [&] {
        auto r = http_->Do({.method = "GET", .target = "/readyz"});
        return r.ok() && r->status == 200;
      },
      60s);
  CHECK_MSG(ready, "warren server never became ready:\n" << log());
}

bool WarrenServer::DeleteEverything(std::chrono::milliseconds timeout) {
  if (!http_) return false;
  const std::string base = "/apis/agents.kruise.io/v1alpha1";
  for (const char* plural : {"sandboxclaims", "sandboxsets", "sandboxes"}) {
    auto list = http_->Do({.method = "GET", .target = base + "/" + plural});
    if (!list.ok() || list->status != 200) return false;
    auto doc = api::ParseJson(list->body);
    if (!doc.ok()) return false;
    for (const auto& item : (*doc)["items"]) {
      std::string ns = item["metadata"].value("namespace", "default");
      std::string name = item["metadata"].value("name", "");
      http_
          ->Do({.method = "DELETE",
                .target = fmt::format("{}/namespaces/{}/{}/{}", base, ns, plural, name)})
          .status()
          .IgnoreError();
    }
  }
  return Eventually(
      [&] {
        auto list = http_->Do({.method = "GET", .target = base + "/sandboxes"});
        if (!list.ok() || list->status != 200) return false;
        auto doc = api::ParseJson(list->body);
        return doc.ok() && (*doc)["items"].empty();
      },
      timeout);
}

void WarrenServer::Stop() {
  if (!child_) return;
  child_->Signal(SIGTERM);
  child_->Wait(30s);
  child_.reset();
  http_.reset();
}

void WarrenServer::Kill9() {
  if (!child_) return;
  child_->Signal(SIGKILL);
  child_->Wait(10s);
  child_.reset();
  http_.reset();
}

std::string WarrenServer::metrics_address() const {
  std::ifstream f(data_dir_ + "/metrics.port");
  int port = 0;
  CHECK_MSG(f >> port, "no metrics.port in " << data_dir_);
  return fmt::format("127.0.0.1:{}", port);
}

std::string WarrenServer::log() const { return ReadFile(data_dir_ + "/server.log"); }

std::pair<int, std::string> WarrenServer::Cli(const std::vector<std::string>& args,
                                              const std::string& input) {
  std::string in_path = data_dir_ + "/cli-input";
  std::string out_path = data_dir_ + "/cli-output";
  {
    std::ofstream f(in_path, std::ios::trunc);
    f << input;
  }
  unlink(out_path.c_str());
  std::vector<std::string> argv = {Binary(), "--server", "http://" + address()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("WARREN_API_KEY=")) continue;
    env.emplace_back(*e);
  }
  if (!admin_key_.empty()) env.push_back("WARREN_API_KEY=" + admin_key_);
  std::vector<char*> cenv;
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  int in = open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(in);
  close(out);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), ReadFile(out_path)};
}

void WarrenServer::Apply(const std::string& yaml) {
  auto [code, out] = Cli({"apply", "-f", "-"}, yaml);
  CHECK_MSG(code == 0, "warren apply failed (" << code << "): " << out);
}

Prometheus::Prometheus(const std::vector<std::string>& targets, std::chrono::seconds interval) {
  port_ = base::testing::FreeLoopbackPort();
  std::string config = dir_.path() + "/prometheus.yml";
  {
    std::ofstream f(config);
    f << "global:\n  scrape_interval: " << interval.count()
      << "s\n  evaluation_interval: " << interval.count()
      << "s\nscrape_configs:\n  - job_name: warren\n    static_configs:\n"
      << "      - targets: [";
    for (size_t i = 0; i < targets.size(); ++i) f << (i ? ", " : "") << "'" << targets[i] << "'";
    f << "]\n";
  }
  child_ = std::make_unique<Child>(
      std::vector<std::string>{"/usr/bin/prometheus", "--config.file=" + config,
                               "--storage.tsdb.path=" + dir_.path() + "/data",
                               fmt::format("--web.listen-address=127.0.0.1:{}", port_),
                               "--log.level=warn"},
      dir_.path() + "/prometheus.log");
  auto client = net::HttpClient::ForAddress(fmt::format("127.0.0.1:{}", port_));
  CHECK_OK(client.status());
  http_ = std::move(*client);
  bool ready = Eventually(
      [&] {
        auto r = http_->Do({.method = "GET", .target = "/-/ready", .timeout = 1s});
        return r.ok() && r->status == 200;
      },
      60s);
  CHECK_MSG(ready, "prometheus never became ready:\n" << log());
}

Prometheus::~Prometheus() {
  if (child_) {
    child_->Signal(SIGTERM);
    child_->Wait(10s);
  }
}

std::string Prometheus::log() const { return ReadFile(dir_.path() + "/prometheus.log"); }

Result<std::optional<double>> Prometheus::Query(const std::string& promql) {
  auto r = http_->Do({.method = "GET", .target = "/api/v1/query?query=" + UrlEncode(promql)});
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    return UnavailableError(fmt::format("prometheus answered {}: {}", r->status, r->body));
  }
  ASSIGN_OR_RETURN(auto doc, api::ParseJson(r->body));
  if (doc.value("status", "") != "success") return UnavailableError(r->body);
  const auto& result = doc["data"]["result"];
  if (!result.is_array() || result.empty()) return std::optional<double>();
  return std::optional<double>(std::stod(result[0]["value"][1].get<std::string>()));
}

}  // namespace warren::pool_testing
