#include "store/watch_hub.h"

#include <algorithm>
#include <atomic>

namespace warren::store {

namespace {

bool Matches(const WatchOptions& options, const api::Object& obj) {
  if (!options.namespace_.empty() && obj.metadata.namespace_ != options.namespace_) return false;
  return options.label_selector.Matches(obj.metadata.labels) && options.field_selector.Matches(obj);
}

}  // namespace

std::optional<EventType> VisibleAs(std::string_view kind_key, const WatchOptions& options,
                                   const Change& change) {
  if (!kind_key.empty() && change.kind_key != kind_key) return std::nullopt;
  bool now = Matches(options, *change.object);
  EventType type = change.type;
  if (type == EventType::kModified) {
    bool before = change.previous ? Matches(options, *change.previous) : now;
    if (!before && !now) return std::nullopt;
    if (!before) type = EventType::kAdded;
    if (!now) type = EventType::kDeleted;
  } else if (!now) {
    return std::nullopt;
  }
  return type;
}

struct WatchHub::Subscriber {
  std::string kind_key;  // empty = every kind
  WatchOptions options;
  WatchSink sink;
  std::atomic<bool> cancelled{false};
  // The thread inside the sink right now, so Cancel from a callback does not wait on itself.
  std::atomic<std::thread::id> delivering{};

  std::mutex mu;                // serialises delivery to the sink
  bool live = false;            // guarded by mu: false while the replay runs
  std::vector<Change> pending;  // guarded by mu: live changes that arrived during the replay
  int64_t last_revision = 0;    // guarded by mu

  // Delivers one change through the filter. Caller holds mu.
  void Deliver(const Change& change) {
    if (!change.snapshot) {
      if (change.revision <= last_revision) return;
      last_revision = change.revision;
    }
    if (cancelled.load(std::memory_order_relaxed)) return;
    std::optional<EventType> type = VisibleAs(kind_key, options, change);
    if (!type || !sink.on_event) return;
    delivering = std::this_thread::get_id();
    sink.on_event(WatchEvent{*type, change.object, change.revision});
    delivering = std::thread::id();
  }
};

struct WatchHub::State {
  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<Subscriber>> subscribers;  // guarded by mu
  std::deque<std::vector<Change>> queue;                 // guarded by mu
  bool closing = false;                                  // guarded by mu
  Status close_reason;                                   // guarded by mu

  void Remove(const Subscriber* sub) {
    std::lock_guard lock(mu);
    std::erase_if(subscribers, [&](const auto& s) { return s.get() == sub; });
  }
};

namespace {

class HubSubscription final : public Subscription {
 public:
  HubSubscription(std::weak_ptr<WatchHub::State> state, std::shared_ptr<WatchHub::Subscriber> sub)
      : state_(std::move(state)), sub_(std::move(sub)) {}
  ~HubSubscription() override { Cancel(); }

  void Cancel() override {
    CancelAsync();
    // Wait for a delivery in flight to finish, unless this is that delivery.
    if (sub_->delivering.load() == std::this_thread::get_id()) return;
    std::lock_guard lock(sub_->mu);
  }

  void CancelAsync() override {
    if (sub_->cancelled.exchange(true)) return;
    if (auto state = state_.lock()) state->Remove(sub_.get());
  }

 private:
  std::weak_ptr<WatchHub::State> state_;
  std::shared_ptr<WatchHub::Subscriber> sub_;
};

}  // namespace

WatchHub::WatchHub() : state_(std::make_shared<State>()) {
  dispatcher_ = std::thread([state = state_] {
    while (true) {
      std::vector<Change> batch;
      std::vector<std::shared_ptr<Subscriber>> subs;
      {
        std::unique_lock lock(state->mu);
        state->cv.wait(lock, [&] { return !state->queue.empty() || state->closing; });
        if (state->queue.empty()) break;  // closing and drained
        batch = std::move(state->queue.front());
        state->queue.pop_front();
        subs = state->subscribers;
      }
      for (const auto& sub : subs) {
        std::lock_guard lock(sub->mu);
        if (sub->cancelled.load()) continue;
        if (!sub->live) {
          sub->pending.insert(sub->pending.end(), batch.begin(), batch.end());
          continue;
        }
        for (const Change& c : batch) sub->Deliver(c);
      }
    }
    // Closed: end every remaining subscription.
    std::vector<std::shared_ptr<Subscriber>> subs;
    Status reason;
    {
      std::lock_guard lock(state->mu);
      subs.swap(state->subscribers);
      reason = state->close_reason;
    }
    for (const auto& sub : subs) {
      std::lock_guard lock(sub->mu);
      if (sub->cancelled.exchange(true)) continue;
      if (sub->sink.on_close) sub->sink.on_close(reason);
    }
  });
}

WatchHub::~WatchHub() { Close(UnavailableError("the store is shutting down")); }

void WatchHub::Close(const Status& reason) {
  {
    std::lock_guard lock(state_->mu);
    if (!state_->closing) {
      state_->closing = true;
      state_->close_reason = reason;
    }
  }
  state_->cv.notify_all();
  if (dispatcher_.joinable()) dispatcher_.join();
}

void WatchHub::Publish(std::vector<Change> changes) {
  if (changes.empty()) return;
  {
    std::lock_guard lock(state_->mu);
    if (state_->closing) return;
    state_->queue.push_back(std::move(changes));
  }
  state_->cv.notify_one();
}

size_t WatchHub::subscriber_count() const {
  std::lock_guard lock(state_->mu);
  return state_->subscribers.size();
}

Result<std::unique_ptr<Subscription>> WatchHub::Subscribe(std::string kind_key,
                                                          WatchOptions options, WatchSink sink,
                                                          const Replay& replay) {
  auto sub = std::make_shared<Subscriber>();
  sub->kind_key = std::move(kind_key);
  sub->options = std::move(options);
  sub->sink = std::move(sink);
  {
    std::lock_guard lock(state_->mu);
    if (state_->closing) return UnavailableError("the store is shutting down");
    state_->subscribers.push_back(sub);
  }
  // The dispatcher only buffers for this subscriber until it is live, so the replay may call
  // the sink without holding the subscriber's lock.
  Result<int64_t> replayed = replay([&](const Change& c) { sub->Deliver(c); });
  if (!replayed.ok()) {
    sub->cancelled = true;
    state_->Remove(sub.get());
    return replayed.status();
  }
  {
    std::lock_guard lock(sub->mu);
    sub->last_revision = std::max(sub->last_revision, *replayed);
    for (const Change& c : sub->pending) sub->Deliver(c);
    sub->pending.clear();
    sub->pending.shrink_to_fit();
    sub->live = true;
  }
  return std::unique_ptr<Subscription>(new HubSubscription(state_, sub));
}

}  // namespace warren::store
