#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/kinds.h"
#include "store/store.h"

namespace warren::node {

// Hands the key ("namespace/name") of every object of one kind to `on_key`: all of them once
// at Start (a list), then each one a watch event names, relisting whenever the watch ends, so
// a key is never missed (it may be handed twice: the receiver's work queue folds repeats).
// `after_list`, when given, runs after every list: for keys a list cannot show (objects gone
// while nobody watched that the receiver still holds).
//
// Threads: Start lists on the caller's thread, then one watch thread calls `on_key`. Borrows
// the store, which must outlive it. Stop (and the destructor) joins.
class KindWatch {
 public:
  KindWatch(store::Store& store, const api::KindInfo& kind,
            std::function<void(const std::string& key)> on_key,
            std::function<void()> after_list = nullptr);
  ~KindWatch();
  KindWatch(const KindWatch&) = delete;
  KindWatch& operator=(const KindWatch&) = delete;

  // Hands the objects too, each before the key that names them: every list's items, and every
  // watch event. Call before Start.
  struct ObjectHandlers {
    std::function<void(const std::vector<api::Object>& items)> on_list;
    std::function<void(const store::WatchEvent& event)> on_event;
  };
  void HandObjects(ObjectHandlers handlers) { objects_ = std::move(handlers); }

  void Start();
  void Stop();

 private:
  int64_t Relist();
  void Loop(int64_t revision);

  store::Store& store_;
  const api::KindInfo& kind_;
  const std::function<void(const std::string&)> on_key_;
  const std::function<void()> after_list_;
  ObjectHandlers objects_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::mutex mu_;
  std::unique_ptr<store::Watcher> watcher_;  // guarded by mu_
};

}  // namespace warren::node
