#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "controller/informer.h"
#include "controller/work_queue.h"
#include "store/store.h"

namespace warren::controller {

// The control plane's half of ImagePullJob (api/types/image_pull_job.h; node/image_puller.h is
// the other): which nodes a job targets (selector.names that exist, Nodes matching the label
// selector, the nodes of the namespace's Sandboxes matching podSelector, or every Node), written
// to status.targetNodes (a node that once had an entry stays a target), and the counts Kruise
// shows (desired, active, succeeded, failed, failedNodes, message, startTime, completionTime)
// from the nodes' own entries. A job of type Always completes when every target finished
// (one that targets no node completes at once, as Kruise's does), or when
// activeDeadlineSeconds passed since it started (unfinished nodes then count as failed); it is
// deleted ttlSecondsAfterFinished after completing.
//
// Thread-safe; one worker thread. Borrows the store and clock.
class ImagePullJobController {
 public:
  ImagePullJobController(store::Store& store, base::Clock& clock);
  ~ImagePullJobController();

  Status Start();
  void Stop();

 private:
  void Run();
  // Ok, or an error to retry with backoff. Schedules its own later look (deadline, TTL).
  Status Reconcile(const std::string& key);

  store::Store& store_;
  base::Clock& clock_;
  Informer jobs_;
  Informer nodes_;
  Informer sandboxes_;
  WorkQueue queue_;
  std::thread worker_;
};

}  // namespace warren::controller
