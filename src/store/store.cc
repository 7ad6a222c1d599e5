#include "store/store.h"

#include <fmt/format.h>

#include <condition_variable>
#include <deque>
#include <mutex>

namespace warren::store {

std::string_view EventTypeName(EventType type) {
  switch (type) {
    case EventType::kAdded:
      return "ADDED";
    case EventType::kModified:
      return "MODIFIED";
    case EventType::kDeleted:
      return "DELETED";
  }
  return "UNKNOWN";
}

namespace {

// The queue between a push subscription (store thread) and the Watcher's consumer. Shared by
// the sink callbacks and the Watcher, hence shared_ptr.
struct WatchQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<WatchEvent> events;  // guarded by mu
  Status ended;                   // guarded by mu; non-ok once the watch is over
  size_t max_queued = 0;
  Subscription* subscription = nullptr;  // guarded by mu; set once subscribed
};

class QueueWatcher final : public Watcher {
 public:
  QueueWatcher(std::shared_ptr<WatchQueue> queue, std::unique_ptr<Subscription> subscription)
      : queue_(std::move(queue)), subscription_(std::move(subscription)) {
    std::lock_guard lock(queue_->mu);
    queue_->subscription = subscription_.get();
  }
  ~QueueWatcher() override { Stop(); }

  Result<std::optional<WatchEvent>> Next(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(queue_->mu);
    queue_->cv.wait_for(lock, timeout,
                        [&] { return !queue_->events.empty() || !queue_->ended.ok(); });
    if (!queue_->events.empty()) {
      WatchEvent e = std::move(queue_->events.front());
      queue_->events.pop_front();
      return std::optional<WatchEvent>(std::move(e));
    }
    if (!queue_->ended.ok()) return queue_->ended;
    return std::optional<WatchEvent>();
  }

  void Stop() override {
    {
      std::lock_guard lock(queue_->mu);
      if (queue_->ended.ok()) queue_->ended = CancelledError("watch stopped");
      queue_->subscription = nullptr;
    }
    queue_->cv.notify_all();
    if (subscription_) subscription_->Cancel();
  }

 private:
  std::shared_ptr<WatchQueue> queue_;
  std::unique_ptr<Subscription> subscription_;
};

}  // namespace

std::string PinnedName(const WatchOptions& options) {
  for (const auto& r : options.field_selector.requirements()) {
    if (r.field == "metadata.name" && r.equals) return r.value;
  }
  return {};
}

Result<std::unique_ptr<Watcher>> Store::Watch(const api::KindInfo* kind, WatchOptions options) {
  auto queue = std::make_shared<WatchQueue>();
  queue->max_queued = std::max<size_t>(1, options.max_queued_events);
  WatchSink sink;
  sink.on_event = [queue](const WatchEvent& event) {
    std::lock_guard lock(queue->mu);
    if (!queue->ended.ok()) return;
    if (queue->events.size() >= queue->max_queued) {
      queue->ended = ResourceExhaustedError(fmt::format(
          "watch fell behind by more than {} events; list again and watch from the list's "
          "resourceVersion",
          queue->max_queued));
      if (queue->subscription) queue->subscription->CancelAsync();
      queue->cv.notify_all();
      return;
    }
    queue->events.push_back(event);
    queue->cv.notify_one();
  };
  sink.on_close = [queue](const Status& status) {
    std::lock_guard lock(queue->mu);
    if (queue->ended.ok()) {
      queue->ended = status.ok() ? UnavailableError("watch closed") : status;
    }
    queue->cv.notify_all();
  };
  ASSIGN_OR_RETURN(auto subscription, Subscribe(kind, std::move(options), std::move(sink)));
  return std::unique_ptr<Watcher>(new QueueWatcher(queue, std::move(subscription)));
}

}  // namespace warren::store
