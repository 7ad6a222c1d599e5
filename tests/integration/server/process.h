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
  // `data_dir` empty: a fresh temporary directory. `extra_args` go to `warren server`.
  explicit ServerProcess(std::string data_dir = "", std::vector<std::string> extra_args = {});
  ~ServerProcess();

  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::string& data_dir() const { return data_dir_; }
  // Sends the admin key with every request (Authorization: Bearer).
  net::HttpClient& http() { return *http_; }
  // The admin key `warren apikey bootstrap` made for the data directory.
  const std::string& admin_key() const { return admin_key_; }

  // Runs the `warren` CLI against this server, with the admin key.
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
  std::string admin_key_;
  std::unique_ptr<net::HttpClient> http_;
};

}  // namespace warren::testing
