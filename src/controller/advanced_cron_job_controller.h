#pragma once

#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "controller/informer.h"
#include "controller/work_queue.h"
#include "store/store.h"

namespace warren::controller {

// Runs AdvancedCronJobs (api/types/advanced_cron_job.h) as OpenKruise's controller does
// (openkruise-core.md §3.2), with its pitfall fixed: the last firing acted on is kept in
// status.lastScheduleTime itself, so children removed by the history limits never fire again.
//   - Only the latest missed firing since lastScheduleTime (else creation) is acted on; one
//     older than startingDeadlineSeconds is not acted on at all.
//   - imagePullJobTemplate: an ImagePullJob `<name>-<unix seconds>` owned by the cron job
//     (labels and annotations from the template, plus apps.kruise.io/scheduled-at);
//     concurrencyPolicy Forbid waits while one is unfinished (the firing stays due until its
//     deadline), Replace deletes the unfinished ones first. Finished children beyond
//     successful/failedJobsHistoryLimit are deleted, oldest first.
//   - sandboxSetReplicasTemplate: the SandboxSet's spec.replicas is set (a scheduled pool size).
//   - paused: status and history still kept, nothing fires.
// The clock is injected (tests move it); wake-ups are scheduled for the next firing. One worker
// thread; borrows the store and clock.
class AdvancedCronJobController {
 public:
  AdvancedCronJobController(store::Store& store, base::Clock& clock);
  ~AdvancedCronJobController();

  Status Start();
  void Stop();
  // Makes every cron job look again now (tests call it after moving the clock).
  void Resync();

 private:
  void Run();
  Status Reconcile(const std::string& key);

  store::Store& store_;
  base::Clock& clock_;
  Informer jobs_;
  Informer children_;
  WorkQueue queue_;
  std::thread worker_;
};

}  // namespace warren::controller
