#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/native/native_runtime.h"
#include "runtime/testing/busybox_rootfs.h"

namespace warren::gateway::testing {

// Ports the servers listen on inside each sandbox (loopback of its network namespace only).
inline constexpr uint16_t kHttpdPort = 8080;      // busybox httpd: /id.txt = the sandbox id
inline constexpr uint16_t kEnvdLikePort = 49983;  // the same httpd on envd's port (token tests)
inline constexpr uint16_t kStreamPort = 8081;     // chunked streams (stream.sh)
inline constexpr uint16_t kUpgradePort = 8082;    // 101 then a line echo (upgrade.sh)
inline constexpr uint16_t kGoPort = 8083;         // lets a waiting /finite stream go on (go.sh)
inline constexpr uint16_t kClosedPort = 9999;     // nothing listens

// Real sandboxes (NativeRuntime, a busybox image layer) each running busybox httpd and three
// busybox `nc -ll -e` servers written as shell scripts:
//   stream.sh  GET /finite: "tick 1", then waits until /tmp/go exists, "tick 2", end of body;
//              anything else: "tick 1", then "tick" every 20 ms until the connection dies.
//   upgrade.sh 101 Switching Protocols, then echoes each line back as "echo: <line>".
//   go.sh      creates /tmp/go and answers 200.
// Owns the runtime, its state and cgroup parent; the destructor destroys every sandbox and
// removes the cgroups. Needs root. Not thread-safe (the runtime it exposes is).
class SandboxServers {
 public:
  static Result<std::unique_ptr<SandboxServers>> Create();
  ~SandboxServers();

  // Creates and starts a sandbox with a fresh E2B-style id and waits until every server in it
  // accepts connections.
  Result<std::string> Start();
  runtime::native::NativeRuntime& runtime() { return *runtime_; }

 private:
  SandboxServers() = default;

  std::unique_ptr<runtime::testing::TempDir> dir_;
  std::string layer_;
  std::string cgroup_parent_;
  std::unique_ptr<runtime::native::NativeRuntime> runtime_;
};

}  // namespace warren::gateway::testing
