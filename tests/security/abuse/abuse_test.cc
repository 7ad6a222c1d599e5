// Issue 11's must-show for the control plane under abuse, against a real `warren server`:
// 10,000 idle connections to the API and 10,000 to the gateway, a slowloris client and a client
// address over its connection cap do not stop a create from another client address from
// answering.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/close_range.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "api/json.h"
#include "base/unique_fd.h"
#include "net/testing/raw_client.h"
#include "store/testing/temp_store.h"

namespace warren {
namespace {

using net::testing::RawClient;
using namespace std::chrono_literals;

constexpr int kIdlePerListener = 10000;
constexpr rlim_t kOpenFiles = 65536;  // 20,000 idle sockets here, as many in the server

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Waits for a file the server writes once it serves (its port, the gateway's port).
uint16_t WaitForPort(const std::string& path, pid_t server) {
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    int port = std::atoi(ReadFile(path).c_str());
    if (port > 0) return static_cast<uint16_t>(port);
    int status = 0;
    if (waitpid(server, &status, WNOHANG) != 0) return 0;
    std::this_thread::sleep_for(50ms);
  }
  return 0;
}

// A connection from `local_ip` that sends nothing, opened without waiting for the handshake.
base::UniqueFd OpenIdle(const char* local_ip, uint16_t port) {
  base::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return fd;
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, local_ip, &local.sin_addr);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(port);
  remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) return {};
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) != 0 &&
      errno != EINPROGRESS) {
    return {};
  }
  return fd;
}

class AbuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0)
      GTEST_SKIP() << "needs root (RLIMIT_NOFILE above the hard limit, sandboxes)";
    rlimit nofile{kOpenFiles, kOpenFiles};
    if (setrlimit(RLIMIT_NOFILE, &nofile) != 0) {
      // No CAP_SYS_RESOURCE (a container): the hard limit stays, and so does the server's, whose
      // listeners each take a quarter of it. The flood is sized to fit and says so.
      ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &nofile), 0);
      nofile.rlim_cur = nofile.rlim_max;
      ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &nofile), 0) << strerror(errno);
      idle_per_listener_ =
          std::min<int>(kIdlePerListener, static_cast<int>(nofile.rlim_max / 4) - 1200);
      std::cerr << "RLIMIT_NOFILE hard limit " << nofile.rlim_max
                << " cannot be raised: " << idle_per_listener_
                << " idle connections per listener, not " << kIdlePerListener << "\n";
    }
    hard_limit_ = nofile.rlim_max;
    // Sandboxes with a user namespace reach their layers through this directory.
    ASSERT_EQ(chmod(dir_.path().c_str(), 0711), 0);
    data_dir_ = dir_.path() + "/data";
    std::string boot = std::string(WARREN_BIN) + " apikey bootstrap --data-dir " + data_dir_ +
                       " --config " + dir_.path() + "/config >/dev/null";
    ASSERT_EQ(std::system(boot.c_str()), 0);
    admin_key_ = ReadFile(data_dir_ + "/admin-key");
    while (!admin_key_.empty() && isspace(admin_key_.back())) admin_key_.pop_back();
    ASSERT_FALSE(admin_key_.empty());

    std::string port_file = dir_.path() + "/port";
    server_ = fork();
    ASSERT_GE(server_, 0);
    if (server_ == 0) {
      // The soft limit starts below the hard one, as under systemd: the server raises it.
      rlimit soft{1024, hard_limit_};
      setrlimit(RLIMIT_NOFILE, &soft);
      execl(WARREN_BIN, WARREN_BIN, "server", "--port", "0", "--data-dir", data_dir_.c_str(),
            "--port-file", port_file.c_str(), "--log-level", "warn", "--sandbox-network", "none",
            nullptr);
      _exit(127);
    }
    api_port_ = WaitForPort(port_file, server_);
    ASSERT_NE(api_port_, 0) << "warren server did not start";
    gateway_port_ = WaitForPort(data_dir_ + "/gateway.port", server_);
    ASSERT_NE(gateway_port_, 0) << "the gateway did not start";
    auto deadline = std::chrono::steady_clock::now() + 120s;
    while (Call("127.0.0.1", "GET", "/readyz").first != 200) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the server never became ready";
      std::this_thread::sleep_for(200ms);
    }
  }

  void TearDown() override {
    idle_.clear();
    if (server_ <= 0) return;
    if (!sandbox_id_.empty()) {
      Call("127.0.0.1", "DELETE", "/sandboxes/" + sandbox_id_);
      // The node agent destroys it; a server stopped first would leave it running.
      auto deadline = std::chrono::steady_clock::now() + 60s;
      while (Call("127.0.0.1", "GET", "/sandboxes/" + sandbox_id_).first != 404 &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(200ms);
      }
      deadline = std::chrono::steady_clock::now() + 60s;
      while (ListedSandboxes() > 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(200ms);
      }
      EXPECT_EQ(ListedSandboxes(), 0) << "a sandbox was left running";
    }
    kill(server_, SIGTERM);
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (waitpid(server_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(server_, SIGKILL);
        waitpid(server_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
  }

  // One request to the API from `local_ip`, with the admin key on both headers (E2B routes read
  // X-API-Key, the resource API Authorization). Status 0 when the connection failed.
  std::pair<int, std::string> Call(const std::string& local_ip, const std::string& method,
                                   const std::string& target, const std::string& body = "") {
    auto c = RawClient::ConnectFrom(local_ip, api_port_);
    if (!c.ok()) return {0, c.status().ToString()};
    std::string req = method + " " + target + " HTTP/1.1\r\nHost: t\r\nX-API-Key: " + admin_key_ +
                      "\r\nAuthorization: Bearer " + admin_key_ + "\r\n";
    if (!body.empty()) {
      req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n";
    }
    req += "Connection: close\r\n\r\n" + body;
    if (!c->Send(req).ok()) return {0, "send failed"};
    auto resp = c->ReadResponse(90s);
    if (!resp.ok()) return {0, resp.status().ToString()};
    return {resp->status, resp->body};
  }

  // An E2B create from 127.0.0.3 (no flood comes from there) must answer 201; TearDown deletes
  // the sandbox.
  void CreateFromAnotherAddress() {
    auto [status, body] =
        Call("127.0.0.3", "POST", "/sandboxes", R"({"templateID":"base","timeout":120})");
    ASSERT_EQ(status, 201) << body;
    auto created = api::ParseJson(body);
    ASSERT_TRUE(created.ok()) << body;
    sandbox_id_ = (*created).value("sandboxID", "");
    EXPECT_FALSE(sandbox_id_.empty()) << body;
  }

  int ListedSandboxes() {
    auto [status, body] = Call("127.0.0.1", "GET", "/apis/agents.kruise.io/v1alpha1/sandboxes");
    if (status != 200) return -1;
    auto doc = api::ParseJson(body);
    if (!doc.ok() || !(*doc)["items"].is_array()) return -1;
    return static_cast<int>((*doc)["items"].size());
  }

  // A sample of /metrics, e.g. Metric("warren_http_connections_open", "api").
  double Metric(const std::string& name, const std::string& labels) {
    auto [status, body] = Call("127.0.0.1", "GET", "/metrics");
    if (status != 200) return -1;
    std::regex line("(^|\n)" + name + "\\{" + labels + "\\} ([0-9.e+]+)");
    std::smatch m;
    if (!std::regex_search(body, m, line)) return -1;
    return std::stod(m[2].str());
  }

  // Opens `count` idle connections to `port`, spread over 127.0.1.x so each address stays
  // under its cap: these are held open, not refused.
  void Flood(uint16_t port, int count) {
    for (int i = 0; i < count; ++i) {
      std::string ip = "127.0.1." + std::to_string(1 + i / 500);
      base::UniqueFd fd = OpenIdle(ip.c_str(), port);
      ASSERT_TRUE(fd) << "connection " << i << ": " << strerror(errno);
      idle_.push_back(std::move(fd));
    }
  }

  // A child process that opens `count` idle connections to `port` from 127.0.<subnet>.x (500
  // per address, under its cap), tells `ready` once they are all sent, and holds them until
  // the returned pipe is closed. A process of its own: the sockets would not fit beside ours.
  struct Holder {
    pid_t pid = -1;
    base::UniqueFd release;  // close to let the child go
    Holder() = default;
    Holder(pid_t p, base::UniqueFd r) : pid(p), release(std::move(r)) {}
    Holder(Holder&& o) noexcept : pid(std::exchange(o.pid, -1)), release(std::move(o.release)) {}
    Holder& operator=(Holder&&) = delete;
    ~Holder() { Release(*this); }  // on every path out of a test, failed assertions included
  };
  Holder HoldIdleFromChild(uint16_t port, int count, int subnet) {
    int ready[2], hold[2];
    if (pipe2(ready, O_CLOEXEC) != 0 || pipe2(hold, O_CLOEXEC) != 0) return {};
    pid_t pid = fork();
    if (pid == 0) {
      // Keep only the two pipe ends it uses: an inherited write end of another holder's pipe
      // would keep that holder waiting forever.
      int a = std::min(ready[1], hold[0]), b = std::max(ready[1], hold[0]);
      close_range(3, static_cast<unsigned>(a - 1), 0);
      close_range(static_cast<unsigned>(a + 1), static_cast<unsigned>(b - 1), 0);
      close_range(static_cast<unsigned>(b + 1), ~0U, 0);
      char ip[32];
      for (int i = 0; i < count; ++i) {
        snprintf(ip, sizeof ip, "127.0.%d.%d", subnet + i / (500 * 250), 1 + (i / 500) % 250);
        base::UniqueFd fd = OpenIdle(ip, port);
        if (!fd) _exit(1);
        (void)fd.release();  // held until this process exits
      }
      char c = 1;
      (void)!write(ready[1], &c, 1);
      (void)!read(hold[0], &c, 1);  // returns when the parent closes its end
      _exit(0);
    }
    close(ready[1]);
    close(hold[0]);
    base::UniqueFd ready_fd(ready[0]);
    Holder h(pid, base::UniqueFd(hold[1]));
    if (pid < 0) return h;
    char c = 0;
    if (read(ready_fd.get(), &c, 1) != 1) {
      int status = 0;
      waitpid(pid, &status, 0);
      h.pid = -1;
    }
    return h;
  }

  static void Release(Holder& h) {
    h.release.reset();
    if (h.pid > 0) {
      int status = 0;
      waitpid(h.pid, &status, 0);
      h.pid = -1;
    }
  }

  store::testing::TempDir dir_;
  std::string data_dir_;
  std::string admin_key_;
  pid_t server_ = -1;
  uint16_t api_port_ = 0;
  uint16_t gateway_port_ = 0;
  std::vector<base::UniqueFd> idle_;
  std::string sandbox_id_;
  int idle_per_listener_ = kIdlePerListener;
  rlim_t hard_limit_ = kOpenFiles;
};

TEST_F(AbuseTest, IdleFloodsSlowlorisAndACappedAddressDoNotStopACreateFromAnotherAddress) {
  // A slowloris client: one header byte a second, from the start.
  auto slow = RawClient::ConnectFrom("127.0.0.4", api_port_);
  ASSERT_TRUE(slow.ok()) << slow.status();
  ASSERT_TRUE(slow->Send("GET /sandboxes HTTP/1.1\r\nHost: t\r\nX-Slow: ").ok());
  auto slow_started = std::chrono::steady_clock::now();
  std::atomic<bool> slow_cut{false};
  std::thread slowloris([&] {
    for (int i = 0; i < 120 && !slow_cut; ++i) {
      if (!slow->Send("a").ok() || slow->WaitClosed(1s)) slow_cut = true;
    }
  });

  Flood(api_port_, idle_per_listener_);
  Flood(gateway_port_, idle_per_listener_);
  // The server holds them (accepted, counted open), not the kernel's backlog.
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while ((Metric("warren_http_connections_open", "listener=\"api\"") < idle_per_listener_ ||
          Metric("warren_http_connections_open", "listener=\"gateway\"") < idle_per_listener_) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GE(Metric("warren_http_connections_open", "listener=\"api\""), idle_per_listener_);
  EXPECT_GE(Metric("warren_http_connections_open", "listener=\"gateway\""), idle_per_listener_);

  // An address at its cap (1,024 on the API) is refused with a 503 naming the limit...
  std::vector<RawClient> capped;
  for (int i = 0; i < 1024; ++i) {
    auto c = RawClient::ConnectFrom("127.0.0.5", api_port_);
    ASSERT_TRUE(c.ok()) << c.status();
    capped.push_back(std::move(*c));
  }
  auto refused = RawClient::ConnectFrom("127.0.0.5", api_port_);
  ASSERT_TRUE(refused.ok()) << refused.status();
  auto answer = refused->ReadResponse(30s);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->status, 503);
  EXPECT_NE(answer->body.find("too many connections from 127.0.0.5"), std::string::npos)
      << answer->body;

  // ...while a create from another address answers.
  CreateFromAnotherAddress();

  // The slowloris client is cut at the head timeout (30 s), never answered.
  slowloris.join();
  EXPECT_TRUE(slow_cut.load());
  EXPECT_GE(std::chrono::steady_clock::now() - slow_started, 25s);
  EXPECT_EQ(slow->received().find("HTTP/1.1 200"), std::string::npos) << slow->received();
  EXPECT_GE(
      Metric("warren_http_connections_rejected_total", "listener=\"api\",reason=\"address_full\""),
      1);
  EXPECT_GE(Metric("warren_http_connections_timed_out_total", "listener=\"api\",phase=\"head\""),
            1);
}

// The issue's figure whatever this host's descriptor limit: 10,000 idle connections to each
// listener, more than either may hold (a quarter of the server's open-file limit). The
// listener keeps taking newcomers by closing its longest-idle connections, so a create from
// another client still answers.
TEST_F(AbuseTest, TenThousandIdleConnectionsPerListenerPastItsCapDoNotKeepACreateOut) {
  Holder api = HoldIdleFromChild(api_port_, kIdlePerListener, 2);
  ASSERT_GT(api.pid, 0) << "the API flood could not be opened";
  Holder gateway = HoldIdleFromChild(gateway_port_, kIdlePerListener, 4);
  ASSERT_GT(gateway.pid, 0) << "the gateway flood could not be opened";
  // Every one reached the server: accepted (and, past the cap, others closed to make room).
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while ((Metric("warren_http_connections_accepted_total", "listener=\"api\"") < kIdlePerListener ||
          Metric("warren_http_connections_accepted_total", "listener=\"gateway\"") <
              kIdlePerListener) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_GE(Metric("warren_http_connections_accepted_total", "listener=\"api\""), kIdlePerListener);
  EXPECT_GE(Metric("warren_http_connections_accepted_total", "listener=\"gateway\""),
            kIdlePerListener);
  const double cap = static_cast<double>(hard_limit_ / 4);
  if (cap < kIdlePerListener) {
    EXPECT_GE(Metric("warren_http_connections_reclaimed_total", "listener=\"api\""),
              kIdlePerListener - cap - 1);
  }

  CreateFromAnotherAddress();
  Release(api);
  Release(gateway);
}

}  // namespace
}  // namespace warren
