#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "gateway/sandbox_dialer.h"

namespace warren::gateway::testing {

// A SandboxDialer for tests without root: "sandboxes" are servers on loopback ports, and
// (sandbox id, port) maps to one of them. Answers as Runtime::Dial does: an unknown sandbox is
// NotFound, a known one without that port Unavailable. Real TCP connections. Thread-safe.
class LoopbackDialer final : public SandboxDialer {
 public:
  void Map(const std::string& sandbox_id, uint16_t port, uint16_t local_port);
  Result<base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                              std::chrono::milliseconds timeout) override;
  int dials();

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, uint16_t>, uint16_t> ports_;  // guarded by mu_
  std::set<std::string, std::less<>> sandboxes_;                // guarded by mu_
  int dials_ = 0;                                               // guarded by mu_
};

}  // namespace warren::gateway::testing
