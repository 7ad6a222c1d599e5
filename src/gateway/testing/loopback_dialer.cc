#include "gateway/testing/loopback_dialer.h"

#include "net/dial.h"

namespace warren::gateway::testing {

void LoopbackDialer::Map(const std::string& sandbox_id, uint16_t port, uint16_t local_port) {
  std::lock_guard lock(mu_);
  ports_[{sandbox_id, port}] = local_port;
  sandboxes_.insert(sandbox_id);
}

Result<base::UniqueFd> LoopbackDialer::Dial(std::string_view sandbox_id, uint16_t port,
                                            std::chrono::milliseconds timeout) {
  uint16_t local = 0;
  {
    std::lock_guard lock(mu_);
    ++dials_;
    if (!sandboxes_.count(sandbox_id)) return NotFoundError("no such sandbox");
    auto it = ports_.find({std::string(sandbox_id), port});
    if (it == ports_.end()) return UnavailableError("nothing listens there");
    local = it->second;
  }
  return net::DialTcp("127.0.0.1", local, timeout);
}

std::optional<Result<base::UniqueFd>> LoopbackDialer::DialNow(std::string_view sandbox_id,
                                                              uint16_t port) {
  uint16_t local = 0;
  {
    std::lock_guard lock(mu_);
    if (!dial_now_enabled_ || busy_.count(sandbox_id)) return std::nullopt;
    ++dials_now_;
    if (!sandboxes_.count(sandbox_id)) return NotFoundError("no such sandbox");
    auto it = ports_.find({std::string(sandbox_id), port});
    if (it == ports_.end()) return UnavailableError("nothing listens there");
    local = it->second;
  }
  // Loopback: the handshake is over inside connect(2), as in a sandbox's netns.
  return net::DialTcp("127.0.0.1", local, std::chrono::milliseconds(1000));
}

void LoopbackDialer::EnableDialNow(std::set<std::string, std::less<>> busy) {
  std::lock_guard lock(mu_);
  dial_now_enabled_ = true;
  busy_ = std::move(busy);
}

int LoopbackDialer::dials_now() {
  std::lock_guard lock(mu_);
  return dials_now_;
}

int LoopbackDialer::dials() {
  std::lock_guard lock(mu_);
  return dials_;
}

}  // namespace warren::gateway::testing
