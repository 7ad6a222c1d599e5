#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace warren::testing {

// A `redis-server` (Debian's) on a free loopback port, with no persistence, started and stopped
// by the test (by its pid; nothing else is touched). Kill() is the fault: SIGKILL, the data is
// gone; Start() brings an empty one back on the same port. Not thread-safe.
class RedisProcess {
 public:
  RedisProcess();
  ~RedisProcess();
  RedisProcess(const RedisProcess&) = delete;
  RedisProcess& operator=(const RedisProcess&) = delete;

  void Start();
  void Kill();
  bool running() const { return pid_ > 0; }
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace warren::testing
