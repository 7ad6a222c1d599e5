#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "net/http_client.h"
#include "store/testing/temp_store.h"

namespace warren::testing {

// What a finished command printed and returned.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `argv` (argv[0] a path) with extra environment variables and `input` on stdin; waits up
// to `timeout` (then kills it).
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env = {},
                         const std::string& input = "",
                         std::chrono::seconds timeout = std::chrono::seconds(30));

// `warren server` on an ephemeral port with its own data directory, stopped (SIGTERM, then
// SIGKILL after 10 s) when destroyed. CHECK-fails when it does not come up.
class ServerProcess {
 public:
  // `data_dir` empty: a fresh temporary directory.
  explicit ServerProcess(std::string data_dir = "");
  ~ServerProcess();

  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& data_dir() const { return data_dir_; }
  net::HttpClient& http() { return *http_; }

  // Runs the `warren` CLI against this server.
  CommandResult Cli(const std::vector<std::string>& args, const std::string& input = "");

  // Stops the process (SIGTERM) and waits for it.
  void Stop();
  // Kills the process (SIGKILL: no shutdown code runs) and waits for it.
  void Kill();

 private:
  std::unique_ptr<store::testing::TempDir> temp_;
  std::string data_dir_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::unique_ptr<net::HttpClient> http_;
};

}  // namespace warren::testing
