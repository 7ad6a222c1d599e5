#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "base/check.h"

namespace warren::testing {
namespace {

using namespace std::chrono_literals;

// Prepared before fork: after it the child only calls exec-safe functions.
struct ExecArgs {
  std::vector<std::string> storage;
  std::vector<char*> argv;
  std::vector<std::string> env_storage;
  std::vector<char*> envp;

  ExecArgs(const std::vector<std::string>& args, const std::map<std::string, std::string>& env)
      : storage(args) {
    for (auto& s : storage) argv.push_back(s.data());
    argv.push_back(nullptr);
    for (const auto& [k, v] : env) env_storage.push_back(k + "=" + v);
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry(*e);
      std::string key = entry.substr(0, entry.find('='));
      if (!env.count(key)) env_storage.push_back(entry);
    }
    for (auto& s : env_storage) envp.push_back(s.data());
    envp.push_back(nullptr);
  }
};

pid_t Spawn(ExecArgs& args, int in_fd, int out_fd, int err_fd) {
  const pid_t parent = getpid();
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    // A test that dies without its destructors takes its children with it.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    if (in_fd >= 0) dup2(in_fd, 0);
    if (out_fd >= 0) dup2(out_fd, 1);
    if (err_fd >= 0) dup2(err_fd, 2);
    execve(args.argv[0], args.argv.data(), args.envp.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env, const std::string& input,
                         std::chrono::seconds timeout) {
  ExecArgs args(argv, env);
  int in[2], out[2], err[2];
  CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0);
  pid_t pid = Spawn(args, in[0], out[1], err[1]);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  std::thread writer([fd = in[1], input] {
    size_t off = 0;
    while (off < input.size()) {
      ssize_t n = write(fd, input.data() + off, input.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    close(fd);
  });
  CommandResult result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0 && std::chrono::steady_clock::now() < deadline) {
    if (poll(fds, 2, 200) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  if (open_fds > 0) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  writer.join();
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

ServerProcess::ServerProcess(std::string data_dir, std::vector<std::string> extra_args) {
  if (data_dir.empty()) {
    temp_ = std::make_unique<store::testing::TempDir>();
    data_dir = temp_->path();
  }
  data_dir_ = data_dir;
  std::string port_file = data_dir_ + "/port";
  unlink(port_file.c_str());
  // The admin key, made the way run.sh makes it; every request of http() and Cli() carries it.
  CommandResult boot = RunCommand({WARREN_BIN, "apikey", "bootstrap", "--data-dir", data_dir_,
                                   "--config", data_dir_ + "/.warren/config"});
  CHECK_MSG(boot.exit_code == 0, "warren apikey bootstrap: " << boot.err);
  {
    std::ifstream key_file(data_dir_ + "/admin-key");
    CHECK_MSG(key_file >> admin_key_, "no admin key in " << data_dir_);
  }
  // No node agent unless the test asks for one (WARREN_NODE_AGENT=on in its environment): a
  // server stopped by a test leaves its sandboxes running (to be adopted), which would leak.
  std::map<std::string, std::string> env;
  if (getenv("WARREN_NODE_AGENT") == nullptr) env["WARREN_NODE_AGENT"] = "off";
  std::vector<std::string> argv = {
      WARREN_BIN,    "server",  "--port",      "0",    "--data-dir",        data_dir_,
      "--port-file", port_file, "--log-level", "warn", "--sandbox-network", "none"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  ExecArgs args(argv, env);
  pid_ = Spawn(args, -1, -1, -1);
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream f(port_file);
    int port = 0;
    if (f >> port && port > 0) {
      port_ = static_cast<uint16_t>(port);
      break;
    }
    int status = 0;
    CHECK_MSG(waitpid(pid_, &status, WNOHANG) == 0, "warren server exited during startup");
    std::this_thread::sleep_for(20ms);
  }
  CHECK_MSG(port_ != 0, "warren server did not write its port file");
  auto client = net::HttpClient::ForAddress(address());
  CHECK_OK(client.status());
  http_ = std::move(*client);
  http_->SetDefaultHeader("Authorization", "Bearer " + admin_key_);
}

ServerProcess::~ServerProcess() { Stop(); }

void ServerProcess::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  pid_ = -1;
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

CommandResult ServerProcess::Cli(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {WARREN_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(
      argv, {{"WARREN_SERVER", address()}, {"HOME", data_dir_}, {"WARREN_API_KEY", admin_key_}},
      input);
}

}  // namespace warren::testing
