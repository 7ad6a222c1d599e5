#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "base/clock.h"
#include "base/unique_fd.h"

namespace warren::gateway {

struct IdleUpstreamOptions {
  // Idle connections kept per sandbox port, and in all.
  size_t max_per_port = 64;
  size_t max_total = 4096;
  // Dropped after this long unused. Kept below the keep-alive timeouts servers commonly use
  // (gunicorn's is 2 s, Node's 5 s), so the gateway lets go before the server does: a request
  // sent just as the server closes would fail. Under load connections are reused within
  // milliseconds anyway.
  std::chrono::milliseconds idle_timeout{1000};
  // For envd's port, whose server keeps idle connections for 640 s: long enough that an SDK's
  // calls seconds apart still find one.
  std::chrono::milliseconds envd_idle_timeout{30000};
  uint16_t envd_port = 49983;
};

// Keep-alive connections into sandboxes, idle between requests: net's relay hands a connection
// here after a clean response (ProxyOptions::on_upstream_idle) and the next request to the same
// sandbox port takes it instead of dialing. Entries carry the route generation they were made
// under, so a connection never outlives its sandbox's incarnation (killed, paused, re-claimed).
//
// Thread-safe; no method blocks (Take polls each candidate without waiting). Owns the sockets.
class IdleUpstreams {
 public:
  explicit IdleUpstreams(base::Clock& clock = base::RealClock(), IdleUpstreamOptions options = {});
  IdleUpstreams(const IdleUpstreams&) = delete;
  IdleUpstreams& operator=(const IdleUpstreams&) = delete;

  // The most recently idled connection to (sandbox, port) of `generation` that still looks
  // usable (the server has not closed it or sent anything unasked), or an invalid fd.
  base::UniqueFd Take(std::string_view sandbox_id, uint16_t port, uint64_t generation);
  // Keeps `fd` for reuse (closes it when over the limits).
  void Put(std::string_view sandbox_id, uint16_t port, uint64_t generation, base::UniqueFd fd);
  // Closes every idle connection to the sandbox (its route went down).
  void DropSandbox(std::string_view sandbox_id);
  // Closes connections idle longer than their port's timeout.
  void Sweep();
  size_t size() const;

 private:
  struct Idle {
    base::UniqueFd fd;
    uint64_t generation = 0;
    base::MonoTime since{};
  };
  using Key = std::pair<std::string, uint16_t>;
  struct KeyLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return std::pair<std::string_view, uint16_t>(a.first, a.second) <
             std::pair<std::string_view, uint16_t>(b.first, b.second);
    }
  };

  std::chrono::milliseconds TimeoutFor(uint16_t port) const {
    return port == options_.envd_port ? options_.envd_idle_timeout : options_.idle_timeout;
  }

  base::Clock& clock_;
  const IdleUpstreamOptions options_;
  mutable std::mutex mu_;
  std::map<Key, std::deque<Idle>, KeyLess> idle_;  // guarded by mu_; newest at the back
  size_t total_ = 0;                               // guarded by mu_
};

// True when an idle connection can carry another request: not closed by the peer, no unasked
// bytes waiting, no error pending. Never blocks.
bool IdleConnectionUsable(int fd);

}  // namespace warren::gateway
