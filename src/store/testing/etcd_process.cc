#include "store/testing/etcd_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "base/check.h"
#include "base/testing/free_port.h"
#include "base/unique_fd.h"
#include "net/http_client.h"

namespace warren::store::testing {
namespace {

constexpr const char* kBinary = "/usr/bin/etcd";

bool Answers(const std::string& endpoint) {
  auto client = net::HttpClient::ForAddress(endpoint);
  if (!client.ok()) return false;
  net::ClientRequest req;
  req.method = "POST";
  req.target = "/v3/kv/range";
  req.body = R"({"key":"AA=="})";
  req.timeout = std::chrono::milliseconds(500);
  auto r = (*client)->Do(req);
  return r.ok() && r->status == 200;
}

}  // namespace

EtcdCluster::EtcdCluster(int members, const std::string& parent_dir) {
  std::string tmpl = parent_dir + "/warren-etcd-XXXXXX";
  CHECK_MSG(::mkdtemp(tmpl.data()) != nullptr, "mkdtemp under " << parent_dir);
  dir_ = tmpl;
  CHECK_MSG(::access(kBinary, X_OK) == 0, kBinary << " is missing (apt install etcd-server)");
  std::vector<int> client_ports, peer_ports;
  std::string initial_cluster;
  const std::vector<uint16_t> ports = base::testing::FreeLoopbackPorts(2 * members);
  for (int i = 0; i < members; ++i) {
    client_ports.push_back(ports[2 * i]);
    peer_ports.push_back(ports[2 * i + 1]);
    initial_cluster += fmt::format("{}m{}=http://127.0.0.1:{}", i ? "," : "", i, peer_ports[i]);
    endpoints_.push_back(fmt::format("127.0.0.1:{}", client_ports[i]));
  }
  for (int i = 0; i < members; ++i) {
    std::string client_url = fmt::format("http://127.0.0.1:{}", client_ports[i]);
    std::string peer_url = fmt::format("http://127.0.0.1:{}", peer_ports[i]);
    std::vector<std::string> args = {"etcd",
                                     "--name",
                                     fmt::format("m{}", i),
                                     "--data-dir",
                                     fmt::format("{}/m{}", dir_, i),
                                     "--listen-client-urls",
                                     client_url,
                                     "--advertise-client-urls",
                                     client_url,
                                     "--listen-peer-urls",
                                     peer_url,
                                     "--initial-advertise-peer-urls",
                                     peer_url,
                                     "--initial-cluster",
                                     initial_cluster,
                                     "--initial-cluster-state",
                                     "new",
                                     "--initial-cluster-token",
                                     std::filesystem::path(dir_).filename().string(),
                                     "--logger",
                                     "zap",
                                     "--log-outputs",
                                     "stderr"};
    args_.push_back(std::move(args));
    pids_.push_back(Spawn(i));
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (const auto& e : endpoints_) {
    while (!Answers(e)) {
      if (std::chrono::steady_clock::now() >= deadline) {
        for (size_t i = 0; i < pids_.size(); ++i) Kill(static_cast<int>(i));
        CHECK_MSG(false, fmt::format("etcd at {} did not start; its output is in {}", e, dir_));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

pid_t EtcdCluster::Spawn(int index) {
  std::vector<std::string> args = args_[index];
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Appended to, so a restarted member's output follows its first life's.
  std::string out = fmt::format("{}/m{}.out", dir_, index);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  CHECK_MSG(pid >= 0, "fork: " << std::strerror(errno));
  if (pid == 0) {
    // Only async-signal-safe calls until exec. The member dies with the test process, so a
    // test that crashes leaves no etcd behind.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) ::_exit(127);
    ::execv(kBinary, argv.data());
    ::_exit(127);
  }
  return pid;
}

void EtcdCluster::Restart(int index) {
  CHECK_MSG(pids_[index] == 0, "member " << index << " is running");
  pids_[index] = Spawn(index);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!Answers(endpoints_[index])) {
    CHECK_MSG(std::chrono::steady_clock::now() < deadline,
              "etcd member " << index << " did not come back; its output is in " << dir_);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

EtcdCluster::~EtcdCluster() {
  for (size_t i = 0; i < pids_.size(); ++i) Kill(static_cast<int>(i));
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void EtcdCluster::Kill(int index) {
  pid_t pid = pids_[index];
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  pids_[index] = 0;
}

std::string EtcdCluster::Url(const std::string& prefix) const {
  std::string url = "etcd://";
  for (size_t i = 0; i < endpoints_.size(); ++i) url += (i ? "," : "") + endpoints_[i];
  return url + prefix;
}

}  // namespace warren::store::testing
