#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "api/object.h"
#include "base/status.h"
#include "server/e2b/node_access.h"
#include "store/store.h"

namespace warren::server::e2b {

// Replays envd's /init (annotation agents.kruise.io/init-runtime-request) whenever a sandbox
// becomes Ready again without the E2B layer having initialised it: at server start for every
// Ready sandbox (envd may have restarted with the sandbox while the server was down), and when a
// sandbox turns Ready after having been Ready before (resumed by someone else, restarted). A
// sandbox's first readiness is left to whoever created or claimed it, which initialises envd
// itself before answering. /init is idempotent, so an extra replay costs one request.
//
// Thread-safe. Owns one worker thread and a store subscription; events are queued on the store
// thread and the (blocking) /init calls made on the worker. Borrows the store and node access.
class InitReplayer {
 public:
  InitReplayer(store::Store& store, NodeAccess& node, std::chrono::milliseconds init_timeout);
  ~InitReplayer();

  // Lists the sandboxes, queues a replay for every Ready one, then watches from the list.
  Status Start();
  void Stop();

  // Tells the replayer envd of `sandbox` (as it is now) was just initialised.
  void NoteInitialised(const api::Object& sandbox);

  // Replays done since start (for tests and logs).
  uint64_t replays() const;

 private:
  struct Job {
    std::string uid;
    std::string sandbox_id;
    std::string body;
    std::string token;
    std::string marker;
    int attempts = 0;
  };
  struct Seen {
    bool ready = false;
    bool ever_ready = false;
  };
  void OnEvent(const store::WatchEvent& event);
  void Run();
  void Enqueue(const api::Object& sandbox);

  store::Store& store_;
  NodeAccess& node_;
  const std::chrono::milliseconds init_timeout_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;                    // guarded by mu_
  std::deque<Job> queue_;                    // guarded by mu_
  std::map<std::string, Seen> seen_;         // by uid; guarded by mu_
  std::map<std::string, std::string> done_;  // uid → marker last initialised; guarded by mu_
  uint64_t replays_ = 0;                     // guarded by mu_
  std::unique_ptr<store::Subscription> subscription_;
  std::thread worker_;
};

}  // namespace warren::server::e2b
