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
  // Declines (nullopt) unless EnableDialNow: then answers as Dial does, except for sandboxes
  // named in `busy`, which it declines as a runtime does when a lifecycle operation holds one.
  std::optional<Result<base::UniqueFd>> DialNow(std::string_view sandbox_id,
                                                uint16_t port) override;
  void EnableDialNow(std::set<std::string, std::less<>> busy = {});
  int dials();      // through Dial (a dial thread)
  int dials_now();  // through DialNow, answered

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, uint16_t>, uint16_t> ports_;  // guarded by mu_
  std::set<std::string, std::less<>> sandboxes_;                // guarded by mu_
  int dials_ = 0;                                               // guarded by mu_
  int dials_now_ = 0;                                           // guarded by mu_
  bool dial_now_enabled_ = false;                               // guarded by mu_
  std::set<std::string, std::less<>> busy_;                     // guarded by mu_
};

}  // namespace warren::gateway::testing
