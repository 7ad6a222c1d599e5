#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "net/http_client.h"
#include "store/testing/temp_store.h"

namespace warren::pool_testing {

// A child process the test started (never anything else), with stdout+stderr in `log_path`.
// Destroying it kills it (SIGKILL) and reaps it. Not thread-safe.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::string& log_path,
        const std::map<std::string, std::string>& env = {});
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void Signal(int sig);
  // Waits for the exit (SIGKILL after `timeout`); returns the wait status.
  int Wait(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// `warren server` on an ephemeral port over a data directory that outlives restarts.
class WarrenServer {
 public:
  explicit WarrenServer(std::string data_dir = "");
  ~WarrenServer();

  // The `warren` binary run: this build's, or $WARREN_SERVER_BINARY when set.
  static const char* Binary();

  // Runs the node agent in the server (real sandboxes; root). Off by default: a server a test
  // kills leaves its sandboxes running. Call before Start.
  void EnableNodeAgent() { node_agent_ = true; }
  // Starts the binary and waits for its port file and /readyz.
  void Start(const std::vector<std::string>& extra_args = {});
  // Deletes every Sandbox (and SandboxSet, so nothing refills) and waits until the node agent
  // has destroyed them: a test leaves no sandbox running.
  bool DeleteEverything(std::chrono::milliseconds timeout);
  // SIGTERM and wait (a clean stop).
  void Stop();
  // SIGKILL: no chance to clean up (a crash).
  void Kill9();

  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // The listener that serves /metrics without a key (<data_dir>/metrics.port).
  std::string metrics_address() const;
  const std::string& data_dir() const { return data_dir_; }
  // Sends the admin key (made at the first Start) with every request.
  net::HttpClient& http() { return *http_; }
  const std::string& admin_key() const { return admin_key_; }
  std::string log() const;  // what the server wrote so far

  // `warren <args>` against this server; returns (exit code, stdout+stderr).
  std::pair<int, std::string> Cli(const std::vector<std::string>& args,
                                  const std::string& input = "");
  // Applies a YAML manifest through the CLI; CHECK-fails when it is refused.
  void Apply(const std::string& yaml);

 private:
  std::unique_ptr<store::testing::TempDir> temp_;
  std::string data_dir_;
  std::unique_ptr<Child> child_;
  uint16_t port_ = 0;
  std::unique_ptr<net::HttpClient> http_;
  std::string admin_key_;
  int starts_ = 0;
  bool node_agent_ = false;
  std::vector<std::string> last_args_;
};

// A real Prometheus server (Debian's `prometheus`) on a free loopback port with a temporary
// configuration that scrapes `targets` every `interval`, and its TSDB in a temp dir.
class Prometheus {
 public:
  Prometheus(const std::vector<std::string>& targets, std::chrono::seconds interval);
  ~Prometheus();
  uint16_t port() const { return port_; }
  // An instant query through the HTTP API (/api/v1/query): the first sample's value, nullopt
  // when the result is empty; an error for a failed request or query.
  Result<std::optional<double>> Query(const std::string& promql);
  std::string log() const;

 private:
  store::testing::TempDir dir_;
  uint16_t port_ = 0;
  std::unique_ptr<Child> child_;
  std::unique_ptr<net::HttpClient> http_;
};

// Polls `f` every 20 ms until it returns true or `timeout` passes.
template <class F>
bool Eventually(F f, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    struct timespec ts = {0, 20'000'000};
    nanosleep(&ts, nullptr);
  }
  return f();
}

}  // namespace warren::pool_testing
