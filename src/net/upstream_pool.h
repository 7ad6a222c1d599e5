#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace warren::net {

// Which idle upstream connections a relay may reuse. A connection is pooled under the key of
// the relay that used it and handed out only for an equal key.
struct UpstreamKey {
  // What UpstreamPool::DropGroup closes together (the gateway: a sandbox id).
  std::string group;
  // Which upstream of the group (the gateway: the sandbox port).
  uint32_t target = 0;
  // A connection pooled under another generation is never handed out (the gateway: the route
  // generation, so no connection outlives its sandbox's incarnation).
  uint64_t generation = 0;
};

struct UpstreamPoolOptions {
  // Idle connections kept per key on each loop; past it the longest idle one is closed.
  size_t max_per_key = 64;
  // Idle connections kept on each loop in all; past it a connection is closed, not pooled.
  size_t max_per_loop = 4096;
};

// The idle keep-alive upstream connections of one HttpServer (ProxyOptions::pool_key,
// Responder::ProxyPooled). Each event loop keeps its own: a connection stays registered with the
// loop that relayed over it, so reusing it costs one poll(2) (is it still usable?) beyond the
// relay's own reads and writes, and no thread hop. An idle connection the upstream closed, or on
// which it sent bytes nobody asked for, is never handed out; each is closed after the idle timeout
// its relay gave.
//
// Owned by the server, valid until the server is destroyed. Thread-safe; no method blocks.
class UpstreamPool {
 public:
  virtual ~UpstreamPool() = default;

  // Closes every idle connection of `group` on every loop (its upstream went away). Relays
  // running over its connections are not touched. The closes run on the loops, moments after
  // this returns; meanwhile none of them is handed out if its generation changed too.
  virtual void DropGroup(std::string_view group) = 0;

  // Idle connections held now, over all loops.
  virtual size_t idle_count() const = 0;
};

}  // namespace warren::net
