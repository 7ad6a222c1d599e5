#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"

namespace warren::image::testing {

// A TCP relay on 127.0.0.1 that hands a registry's answers on at a bounded rate, so a test can
// act in the middle of a pull (kill the registry, watch the progress) that loopback would
// otherwise finish in milliseconds. Each connection gets its own connection to the upstream
// (settable, so a restarted registry on a new port can stand behind the same address); when
// either side closes, both are closed. Stops and joins on destruction.
class SlowRelay {
 public:
  SlowRelay(std::string upstream, int64_t bytes_per_second);
  ~SlowRelay();
  SlowRelay(const SlowRelay&) = delete;
  SlowRelay& operator=(const SlowRelay&) = delete;

  const std::string& address() const { return address_; }  // "127.0.0.1:PORT"
  void set_upstream(std::string upstream);

 private:
  void Accept();
  void Relay(base::UniqueFd client);
  std::string upstream() const;

  const int64_t rate_;
  base::UniqueFd listener_;
  std::string address_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::string upstream_;              // guarded by mu_
  std::vector<std::thread> threads_;  // guarded by mu_
  std::thread acceptor_;
};

}  // namespace warren::image::testing
