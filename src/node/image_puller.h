#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/types/image_pull_job.h"
#include "base/clock.h"
#include "base/status.h"
#include "image/image_store.h"
#include "node/event_recorder.h"
#include "node/kind_watch.h"
#include "node/work_queue.h"
#include "store/store.h"

namespace warren::node {

struct ImagePullerOptions {
  std::string node_name;
  // Jobs pulling on this node at once (Kruise's --max-workers-for-pull-image); the rest wait.
  int max_concurrent_pulls = 2;
  // Called after a pull put a new image in the store (the Node object lists them).
  std::function<void()> on_images_changed;
  // The first wait between attempts; doubled after each, at most 30 s (Kruise's daemon).
  std::chrono::milliseconds first_backoff{1000};
};

// The node's half of ImagePullJob (api/types/image_pull_job.h; the controller owns the rest):
// for each unfinished job whose status.targetNodes names this node, once fewer than
// spec.parallelism nodes are pulling, it takes a slot (its entry in status.nodes goes Pulling,
// written against the resourceVersion it read, so two nodes never both take the last slot) and
// pulls: up to backoffLimit+1 attempts, each bounded by timeoutSeconds, 1 s doubling backoff
// between them; IfNotPresent with the image already here succeeds at once. Progress (bytes and
// percent, from image::PullMeter) is written to its entry at most once a second; the end is
// Succeeded with the manifest digest or Failed with the last error, and an Event on the job
// (Pulled / PullImageFailed). A job deleted, completed (its deadline) or no longer targeting the
// node cancels its pull at once; a pull in flight when the agent stopped is taken up again.
//
// Threads: a KindWatch feeds one worker; each pull runs on its own thread. Borrows the store,
// image store and recorder, which must outlive it.
class ImagePuller {
 public:
  ImagePuller(store::Store& store, image::ImageStore& images, EventRecorder& events,
              base::Clock& clock, ImagePullerOptions options);
  ~ImagePuller();
  ImagePuller(const ImagePuller&) = delete;
  ImagePuller& operator=(const ImagePuller&) = delete;

  void Start();
  void Stop();

 private:
  struct Pull {
    std::string uid;
    std::atomic<bool> cancel{false};
    std::atomic<bool> finished{false};
    std::thread thread;
  };

  void WorkerLoop();
  void Sync(const std::string& key);
  void Run(const std::string& key, std::shared_ptr<Pull> pull, api::ImagePullJobSpec spec);
  // Read-modify-write of this node's entry in the job's status, retried on conflicts; NotFound
  // when the job is gone or is another one of that name now.
  Status WriteMine(const std::string& key, const std::string& uid,
                   const std::function<void(api::ImagePullNodeStatus&)>& change);
  void Cancel(const std::string& key);
  void Reap();  // joins finished pull threads; mu_ held

  store::Store& store_;
  image::ImageStore& images_;
  EventRecorder& events_;
  base::Clock& clock_;
  const ImagePullerOptions options_;
  WorkQueue queue_;
  std::unique_ptr<KindWatch> watch_;
  std::thread worker_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Pull>> pulls_;  // guarded by mu_; by job key
};

}  // namespace warren::node
