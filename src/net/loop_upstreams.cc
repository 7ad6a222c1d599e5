#include "net/internal/loop_upstreams.h"

#include <poll.h>

#include <algorithm>

namespace warren::net::internal {

namespace asio = boost::asio;

bool IdleConnectionUsable(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  // Readable (EOF or stray bytes), hung up or in error: unusable. Nothing pending: usable.
  return ::poll(&p, 1, 0) == 0;
}

LoopUpstreams::LoopUpstreams(asio::io_context& ioc, const UpstreamPoolOptions& options,
                             std::atomic<size_t>& total)
    : options_(options), total_(total), sweep_timer_(ioc) {}

LoopUpstreams::~LoopUpstreams() { Clear(); }

void LoopUpstreams::Removed(size_t n) {
  count_ -= n;
  total_.fetch_sub(n, std::memory_order_relaxed);
}

std::optional<UpstreamSocket> LoopUpstreams::Take(const UpstreamKey& key) {
  auto it = idle_.find(SlotView(key.group, key.target));
  if (it == idle_.end()) return std::nullopt;
  std::vector<Idle>& q = it->second;
  SteadyTime now = SteadyTime::clock::now();
  while (!q.empty()) {
    Idle idle = std::move(q.back());
    q.pop_back();
    Removed(1);
    if (idle.generation == key.generation && idle.expires > now &&
        IdleConnectionUsable(idle.socket.native_handle())) {
      return std::move(idle.socket);
    }
    // `idle` closes as it goes.
  }
  return std::nullopt;
}

void LoopUpstreams::Put(const UpstreamKey& key, UpstreamSocket socket,
                        std::chrono::milliseconds idle_timeout) {
  if (count_ >= options_.max_per_loop || options_.max_per_key == 0) return;  // closes `socket`
  auto it = idle_.find(SlotView(key.group, key.target));
  if (it == idle_.end()) it = idle_.try_emplace(Slot{key.group, key.target}).first;
  std::vector<Idle>& q = it->second;
  if (q.size() >= options_.max_per_key) {
    q.erase(q.begin());  // the longest idle goes
    Removed(1);
  }
  SteadyTime expires = SteadyTime::clock::now() + idle_timeout;
  q.push_back(Idle{std::move(socket), key.generation, expires});
  ++count_;
  total_.fetch_add(1, std::memory_order_relaxed);
  ArmSweep(expires);
}

void LoopUpstreams::DropGroup(std::string_view group) {
  for (auto it = idle_.begin(); it != idle_.end();) {
    if (it->first.group == group) {
      Removed(it->second.size());
      it = idle_.erase(it);
    } else {
      ++it;
    }
  }
}

void LoopUpstreams::Clear() {
  Removed(count_);
  idle_.clear();
  sweep_timer_.cancel();
  sweep_at_ = SteadyTime::max();
}

void LoopUpstreams::ArmSweep(SteadyTime at) {
  // A later expiry is found when the armed sweep runs: only an earlier one re-arms.
  if (at >= sweep_at_) return;
  sweep_at_ = at;
  sweep_timer_.expires_at(at);
  sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
    // Aborted: re-armed, cleared, or the loop is going away (`this` may be gone).
    if (ec == asio::error::operation_aborted) return;
    sweep_at_ = SteadyTime::max();
    Sweep();
  });
}

void LoopUpstreams::Sweep() {
  SteadyTime now = SteadyTime::clock::now();
  SteadyTime next = SteadyTime::max();
  for (auto it = idle_.begin(); it != idle_.end();) {
    std::vector<Idle>& q = it->second;
    // Timeouts may differ within a key: scan it all (keys hold a few dozen at most).
    size_t before = q.size();
    std::erase_if(q, [now](const Idle& idle) { return idle.expires <= now; });
    Removed(before - q.size());
    for (const Idle& idle : q) next = std::min(next, idle.expires);
    it = q.empty() ? idle_.erase(it) : std::next(it);
  }
  if (next != SteadyTime::max()) ArmSweep(next);
}

}  // namespace warren::net::internal
