#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

#include "api/object.h"
#include "base/clock.h"
#include "node/event_recorder.h"
#include "node/kind_watch.h"
#include "node/work_queue.h"
#include "store/store.h"

namespace warren::node {

class NodeAgent;

// The image name a Checkpoint's file system is kept under in the node's image store. Reserved:
// a template naming an image under "snapshot/" is refused; a sandbox starts from a checkpoint
// only through the agents.kruise.io/restore-from annotation, which is looked up in its own
// namespace (so one team never starts from another's snapshot).
std::string CheckpointImageName(const std::string& checkpoint_uid);
bool IsCheckpointImageName(std::string_view image);

// Makes Checkpoint objects (agents.kruise.io/v1alpha1) real for the sandboxes of this node:
//   Pending → Creating → Succeeded, with status.checkpointId = the image the sandbox's file
//   system became (NodeAgent::CaptureFilesystem), completionTime, and an Event; Failed with a
//   message naming the cause (no such sandbox, a sandbox that is not running here, contents
//   the runtime cannot keep: `memory` on the native runtime). With `memory` in
//   persistentContents (gVisor), the processes and memory are kept too, from the same instant
//   (memory_image.h); sandboxes started from it go on where the source was.
//   keepRunning: false → after the capture the sandbox is paused, file system only
//   (spec.paused with pauseStrategy Stop): its processes end, its files stay.
//   ttlAfterFinished → the object is deleted that long after it finished.
//   Deletion: the finalizer agents.kruise.io/checkpoint removes the image record and the
//   memory image; its layer stays while sandboxes started from it hold it (image leases),
//   then the image GC frees it.
// A checkpoint that finds its image already made (a crash after the commit, before the status
// write) takes it as its result, so a restart never captures twice or leaks an image. One whose
// capture a restart cut short is captured again whole, unless it was made for one request
// (api::kCheckpointForRequestAnnotation): that one fails, and its TTL collects it.
//
// Threads: a KindWatch feeding a WorkQueue, one worker (captures on a node run one at a
// time). Borrows the store and the agent, which must outlive it; Start after the agent's.
class CheckpointAgent {
 public:
  CheckpointAgent(store::Store& store, NodeAgent& agent, base::Clock& clock);
  ~CheckpointAgent();
  CheckpointAgent(const CheckpointAgent&) = delete;
  CheckpointAgent& operator=(const CheckpointAgent&) = delete;

  void Start();
  void Stop();

 private:
  void WorkerLoop();
  // Returns a delay before this key is looked at again, or zero for never.
  std::chrono::milliseconds Reconcile(const std::string& key);
  std::chrono::milliseconds Capture(api::Object& checkpoint);
  std::chrono::milliseconds Finish(api::Object& checkpoint);
  Status Delete(api::Object& checkpoint);
  // Status write of phase/message (and checkpointId, completionTime when set).
  Status WritePhase(api::Object& checkpoint, const std::string& phase, const std::string& message,
                    const std::string& image = "");

  store::Store& store_;
  NodeAgent& agent_;
  base::Clock& clock_;
  EventRecorder events_;
  WorkQueue queue_;
  KindWatch watch_;
  std::atomic<bool> stopping_{false};
  std::thread worker_;
  // Uids of the checkpoints this agent wrote Creating for and has not seen finish: one found
  // Creating that is not here was being captured when an earlier agent stopped. Worker only.
  std::unordered_set<std::string> capturing_;
};

}  // namespace warren::node
