#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "server/auth/key_store.h"
#include "server/e2b/requests.h"
#include "server/e2b/sandbox_record.h"
#include "server/e2b/sandbox_service.h"
#include "store/store.h"

namespace warren::server::e2b {

struct SnapshotInfo {
  std::string snapshot_id;         // the Checkpoint's name; usable as templateID
  std::vector<std::string> names;  // the name given at creation, if any
  std::string sandbox_id;          // the sandbox it was taken from
  base::WallTime created_at{};
};

struct SnapshotPage {
  std::vector<SnapshotInfo> items;
  std::string next_token;  // empty on the last page
};

// E2B's snapshots and forks on Checkpoint objects (openkruise-agents.md §2.12):
//   - a snapshot is a Checkpoint of the sandbox's file system (the node agent captures it,
//     node/checkpoint_agent.h) plus a SandboxTemplate of the same name, owned by it, holding the
//     source's pod template and agents.kruise.io/restore-from: a create naming the snapshot as
//     templateID is then an ordinary cold create that starts on the captured layer;
//   - deleting a snapshot deletes the Checkpoint (its template goes with it; its disk once no
//     sandbox made from it remains);
//   - fork(N) takes an unlisted Checkpoint, makes N sandboxes from it in parallel (new ids and
//     tokens, the source's env vars and metadata, processes started fresh), then deletes the
//     Checkpoint: the forks hold the layer.
// Everything is scoped to the caller's team like the sandbox calls (another team's snapshot is
// NotFound). Blocking; thread-safe; borrows the store and the sandbox service.
class SnapshotService {
 public:
  static constexpr int64_t kMaxForkCount = 10;

  SnapshotService(store::Store& store, SandboxService& sandboxes);

  // FailedPrecondition (409) when the sandbox is paused or not running.
  Result<SnapshotInfo> Create(const auth::Principal& who, std::string_view sandbox_id,
                              const std::string& name);
  Result<SnapshotPage> List(const auth::Principal& who, const SnapshotQuery& query);
  // NotFound for an unknown snapshot; InvalidArgument for a template that is not a snapshot.
  Status Delete(const auth::Principal& who, std::string_view snapshot_id);
  // One result per fork (a sandbox or why that one failed); an error when none could start
  // (unknown or paused source, the capture failing).
  Result<std::vector<Result<SandboxRecord>>> Fork(const auth::Principal& who,
                                                  std::string_view sandbox_id,
                                                  const ForkRequest& request);

 private:
  // Creates a Checkpoint of `source`, then `alongside` (objects it owns, made before the wait
  // so that a crash of this process leaves a complete snapshot or none), and waits until the
  // node says it succeeded; deleted again on failure. `ttl`: the node deletes it that long
  // after it finished ("" = never). `memory`: the processes and memory too (gVisor).
  Result<api::Object> Capture(const api::Object& source, bool memory, const std::string& name,
                              const std::map<std::string, std::string>& labels,
                              const std::map<std::string, std::string>& annotations,
                              const std::string& ttl,
                              const std::function<Status(const api::Object&)>& alongside);
  Status DeleteCheckpoint(const std::string& namespace_, const std::string& name);

  store::Store& store_;
  SandboxService& sandboxes_;
};

}  // namespace warren::server::e2b
