#pragma once

#include <string>

#include "base/result.h"

namespace warren::node {

// Where sandboxes' envd comes from. Every sandbox start execs warren-envd afresh, and on a VM
// each page of text and data it touches on the way to listen is a page fault the hypervisor
// pays for too; a binary on a tmpfs mounted with huge pages, linked with its segments 2 MiB
// aligned (apps/warren-envd/CMakeLists.txt), is mapped a huge page at a time instead
// (bench/envd/README.md: envd's spawn → listen p50 5.3 → 2.3 ms, a static program that only
// listens 2.1 ms). So the node agent copies envd to such a tmpfs at start and bind-mounts the
// copy into sandboxes.
struct EnvdStage {
  // The tmpfs: mounted on first use with huge=within_size and kept, as /run is (the census of
  // test.sh knows it).
  std::string dir = "/run/warren/bin";
  // The directory in `dir` that holds the copy (named warren-envd, as the original): one per node
  // agent (named after its runtime state dir), so two servers of different builds on one
  // host never swap each other's envd.
  std::string name;
  // A bigger binary (one built with its debug info kept) is not copied: it stays where it is.
  int64_t max_bytes = 64ll << 20;
};

// Copies `envd_path` to `<stage.dir>/<stage.name>/warren-envd` (a temporary file renamed over it,
// so a sandbox starting meanwhile binds the old copy or the new, never half of one; the bind mounts
// of running sandboxes keep the file they bound) and returns its path. Errors name what failed;
// the caller keeps `envd_path` then.
Result<std::string> StageEnvd(const std::string& envd_path, const EnvdStage& stage);

// Removes the copy StageEnvd made and its directory, once no sandbox of this agent is left to start
// from it.
void UnstageEnvd(const EnvdStage& stage);

}  // namespace warren::node
