#include "gateway/idle_upstreams.h"

#include <poll.h>

#include <vector>

namespace warren::gateway {

bool IdleConnectionUsable(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  int n = poll(&p, 1, 0);
  // Readable (EOF or stray bytes), hung up or in error: unusable. Nothing pending: usable.
  return n == 0;
}

IdleUpstreams::IdleUpstreams(base::Clock& clock, IdleUpstreamOptions options)
    : clock_(clock), options_(options) {}

base::UniqueFd IdleUpstreams::Take(std::string_view sandbox_id, uint16_t port,
                                   uint64_t generation) {
  std::vector<base::UniqueFd> discard;  // closed outside the lock
  base::UniqueFd found;
  {
    std::lock_guard lock(mu_);
    auto it = idle_.find(std::pair<std::string_view, uint16_t>(sandbox_id, port));
    if (it == idle_.end()) return found;
    base::MonoTime oldest_ok = clock_.Monotonic() - TimeoutFor(port);
    std::deque<Idle>& q = it->second;
    while (!q.empty()) {
      Idle idle = std::move(q.back());
      q.pop_back();
      --total_;
      if (idle.generation == generation && idle.since >= oldest_ok &&
          IdleConnectionUsable(idle.fd.get())) {
        found = std::move(idle.fd);
        break;
      }
      discard.push_back(std::move(idle.fd));
    }
    if (q.empty()) idle_.erase(it);
  }
  return found;
}

void IdleUpstreams::Put(std::string_view sandbox_id, uint16_t port, uint64_t generation,
                        base::UniqueFd fd) {
  if (!fd) return;
  base::UniqueFd evicted;  // closed outside the lock
  std::lock_guard lock(mu_);
  if (total_ >= options_.max_total) return;  // `fd` closes as it goes
  auto it = idle_.find(std::pair<std::string_view, uint16_t>(sandbox_id, port));
  if (it == idle_.end()) it = idle_.try_emplace(Key(std::string(sandbox_id), port)).first;
  std::deque<Idle>& q = it->second;
  if (q.size() >= options_.max_per_port) {
    evicted = std::move(q.front().fd);  // the longest idle goes
    q.pop_front();
    --total_;
  }
  q.push_back(Idle{std::move(fd), generation, clock_.Monotonic()});
  ++total_;
}

void IdleUpstreams::DropSandbox(std::string_view sandbox_id) {
  std::vector<std::deque<Idle>> dropped;  // closed outside the lock
  std::lock_guard lock(mu_);
  auto it = idle_.lower_bound(std::pair<std::string_view, uint16_t>(sandbox_id, 0));
  while (it != idle_.end() && it->first.first == sandbox_id) {
    total_ -= it->second.size();
    dropped.push_back(std::move(it->second));
    it = idle_.erase(it);
  }
}

void IdleUpstreams::Sweep() {
  std::vector<Idle> expired;  // closed outside the lock
  std::lock_guard lock(mu_);
  base::MonoTime now = clock_.Monotonic();
  for (auto it = idle_.begin(); it != idle_.end();) {
    base::MonoTime oldest_ok = now - TimeoutFor(it->first.second);
    std::deque<Idle>& q = it->second;
    while (!q.empty() && q.front().since < oldest_ok) {
      expired.push_back(std::move(q.front()));
      q.pop_front();
      --total_;
    }
    it = q.empty() ? idle_.erase(it) : std::next(it);
  }
}

size_t IdleUpstreams::size() const {
  std::lock_guard lock(mu_);
  return total_;
}

}  // namespace warren::gateway
