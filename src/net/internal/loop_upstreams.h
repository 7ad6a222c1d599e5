#pragma once

// Private to net/: the idle upstream connections of one event loop (the loop's share of the
// server's UpstreamPool). Includes Asio; never include it outside src/net.

#include <atomic>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "net/upstream_pool.h"

namespace warren::net::internal {

// An upstream connection as a relay uses it: registered with the loop's reactor.
using UpstreamSocket = boost::asio::generic::stream_protocol::socket;

// True when an idle connection can carry another request: the peer has not closed it, sent
// bytes nobody asked for, or left an error pending. One poll(2), never blocks.
bool IdleConnectionUsable(int fd);

// Idle keep-alive upstream connections of one loop, by key, newest last. The sockets stay
// registered with the loop, so a relay takes one over with no system call but the usability
// check. A timer closes those past their idle timeout.
//
// Owned by its Loop and destroyed before the loop's io_context. Not thread-safe: every method
// runs on the loop's thread (the server posts DropGroup there), except that `total` (shared by
// the server's loops, for UpstreamPool::idle_count) is atomic.
class LoopUpstreams {
 public:
  LoopUpstreams(boost::asio::io_context& ioc, const UpstreamPoolOptions& options,
                std::atomic<size_t>& total);
  ~LoopUpstreams();
  LoopUpstreams(const LoopUpstreams&) = delete;
  LoopUpstreams& operator=(const LoopUpstreams&) = delete;

  // The most recently pooled usable connection under `key`, or nullopt. Connections of
  // another generation, expired or unusable ones met on the way are closed.
  std::optional<UpstreamSocket> Take(const UpstreamKey& key);
  // Keeps `socket` under `key` for at most `idle_timeout` (closes it when over the limits).
  void Put(const UpstreamKey& key, UpstreamSocket socket, std::chrono::milliseconds idle_timeout);
  // Closes every connection of `group`.
  void DropGroup(std::string_view group);
  // Closes every connection (server shutdown).
  void Clear();
  size_t size() const { return count_; }

 private:
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct Idle {
    UpstreamSocket socket;
    uint64_t generation = 0;
    SteadyTime expires{};
  };
  struct Slot {
    std::string group;
    uint32_t target = 0;
    bool operator==(const Slot&) const = default;
  };
  using SlotView = std::pair<std::string_view, uint32_t>;
  struct SlotHash {
    using is_transparent = void;
    size_t operator()(const Slot& s) const { return Hash(s.group, s.target); }
    size_t operator()(const SlotView& s) const { return Hash(s.first, s.second); }
    static size_t Hash(std::string_view group, uint32_t target) {
      return std::hash<std::string_view>{}(group) ^ (size_t{target} * 0x9e3779b97f4a7c15ull);
    }
  };
  struct SlotEq {
    using is_transparent = void;
    static SlotView View(const Slot& s) { return {s.group, s.target}; }
    static SlotView View(const SlotView& s) { return s; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return View(a) == View(b);
    }
  };

  void Removed(size_t n);
  void ArmSweep(SteadyTime at);
  void Sweep();

  const UpstreamPoolOptions options_;
  std::atomic<size_t>& total_;
  size_t count_ = 0;
  // Kept when emptied: a busy key takes and puts without allocating.
  std::unordered_map<Slot, std::vector<Idle>, SlotHash, SlotEq> idle_;
  boost::asio::steady_timer sweep_timer_;
  SteadyTime sweep_at_ = SteadyTime::max();
};

}  // namespace warren::net::internal
