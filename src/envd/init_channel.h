#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"
#include "envd/envd_state.h"

namespace warren::envd {

// How the node agent gives envd an /init without a request to it (README.md, "The init
// channel"): a directory the node owns, bind-mounted read-only into the sandbox, with
//   init.json   the /init body envd must hold (absent: none), replaced whole by a rename;
//   generation  8 bytes the node rewrites with a fresh random value after each replacement.
// envd maps `generation` and, before it reads its settings for a request, compares it with the
// value it last read the body under: one load from a shared page. A claim then costs the node
// two file writes instead of a round trip to an envd that may be waiting for a CPU, and the
// first request after it already sees the new token and env vars.
//
// Why a value of its own and not a counter: writers do not coordinate (a claim and the agent's
// replay after a restart may write at once) and a restarted node knows no count. Any value the
// reader has not seen makes it read the body again; a write whose value was read, then the
// body, can only have been followed by a body as new or newer.
inline constexpr char kInitChannelBody[] = "init.json";
inline constexpr char kInitChannelGeneration[] = "generation";

// The node's side. Makes `dir` (mode 0700) with a first generation and no body, both owned by
// `owner` (the sandbox's root as the host sees it): envd, root in the sandbox, reads them, no
// other user of the sandbox can. Idempotent: an existing channel keeps its body.
Status CreateInitChannel(const std::string& dir, uid_t owner);
// Replaces the body with `json` (an /init body; empty: none) and then the generation. The
// sandbox's envd holds it at its next request, or at its start.
Status WriteInitChannel(const std::string& dir, std::string_view json, uid_t owner);

// envd's side. Not thread-safe: EnvdState calls it under its lock.
class InitChannelReader {
 public:
  // Maps dir/generation, which the node made before envd started. Errors: NotFound (no
  // channel), FailedPrecondition (a generation file too short to be one).
  static Result<std::unique_ptr<InitChannelReader>> Open(const std::string& dir);
  // Use Open.
  InitChannelReader(std::string dir, void* map, size_t map_bytes)
      : dir_(std::move(dir)), map_(map), map_bytes_(map_bytes) {}
  ~InitChannelReader();
  InitChannelReader(const InitChannelReader&) = delete;
  InitChannelReader& operator=(const InitChannelReader&) = delete;

  // Whether the node wrote since the last Take (true before the first).
  bool Changed() const;
  // The body as of now, parsed (nullopt: none), noting the generation it answers for. A body
  // that does not parse is an error; it is noted all the same, so it is not read again until
  // the node writes anew.
  Result<std::optional<InitRequest>> Take();

 private:
  uint64_t Generation() const;

  std::string dir_;
  void* map_;
  size_t map_bytes_;
  std::optional<uint64_t> seen_;
};

}  // namespace warren::envd
