// Subscriptions: one etcd watch stream each, on a thread of its own, from the revision after
// what the subscriber has seen. etcd replays history from that revision and then follows live
// writes in one stream, so the replay-then-live hand-off has no seam. When a member goes away
// the stream is opened again on another one from the next revision; when etcd has compacted
// that revision the watch ends with OutOfRange (410 Gone), as SQLite's do.

#include <fmt/format.h>

#include "api/object_codec.h"
#include "base/log.h"
#include "store/etcd/etcd_store_impl.h"
#include "store/watch_hub.h"

namespace warren::store::etcd {

using namespace std::chrono_literals;

// One subscription's state, shared by its thread, the Subscription handle and the store (which
// ends it at shutdown).
struct WatchState {
  std::string kind_key;  // "" = every kind
  WatchOptions options;
  WatchSink sink;
  std::string key, range_end;
  std::shared_ptr<EtcdClient> client;
  std::shared_ptr<const Keys> keys;
  std::chrono::milliseconds give_up_after{15000};
  std::vector<Change> snapshot;  // the initial list of a watch without a revision
  int64_t next_revision = 0;     // stream thread only: where a reopened stream starts

  StreamCanceller canceller;
  std::atomic<bool> cancelled{false};      // by the subscriber
  std::atomic<bool> store_closing{false};  // by the store's destructor
  std::atomic<std::thread::id> delivering{};

  std::mutex mu;        // serialises delivery to the sink
  bool closed = false;  // guarded by mu: on_close was called

  std::mutex wait_mu;
  std::condition_variable wait_cv;  // wakes the backoff between reconnections

  void Deliver(const Change& change) {
    std::lock_guard lock(mu);
    if (cancelled.load() || closed) return;
    std::optional<EventType> type = VisibleAs(kind_key, options, change);
    if (!type || !sink.on_event) return;
    delivering = std::this_thread::get_id();
    sink.on_event(WatchEvent{*type, change.object, change.revision});
    delivering = std::thread::id();
  }

  void Close(const Status& reason) {
    std::lock_guard lock(mu);
    if (cancelled.load() || closed) return;
    closed = true;
    if (sink.on_close) sink.on_close(reason);
  }

  void Stop() {
    canceller.Cancel();
    std::lock_guard lock(wait_mu);
    wait_cv.notify_all();
  }
};

Result<StoredObject> DecodeKv(const api::Json& kv) {
  std::string value = FromB64(kv, "value");
  auto obj = api::ObjectFromJsonText(value);
  if (!obj.ok()) {
    return DataLossError(fmt::format("stored object {} does not parse: {}", FromB64(kv, "key"),
                                     obj.status().message()));
  }
  StoredObject out{std::move(*obj), Int(kv, "mod_revision")};
  out.object.metadata.resource_version = out.revision;
  return out;
}

namespace {

// One event of a watch response as a Change; nullopt for index keys.
std::optional<Change> ToChange(const Keys& keys, const api::Json& event) {
  const api::Json kv = event.value("kv", api::Json::object());
  auto parsed = keys.Parse(FromB64(kv, "key"));
  if (!parsed) return std::nullopt;
  Change c;
  c.revision = Int(kv, "mod_revision");
  c.kind_key = parsed->kind->GroupKind();
  auto prev_it = event.find("prev_kv");
  std::shared_ptr<const api::Object> previous;
  if (prev_it != event.end()) {
    auto prev = DecodeKv(*prev_it);
    if (prev.ok()) previous = std::make_shared<const api::Object>(std::move(prev->object));
  }
  if (event.value("type", std::string("PUT")) == "DELETE") {
    c.type = EventType::kDeleted;
    api::Object last;
    if (previous) {
      last = *previous;
    } else {
      // The previous state was compacted away: what the key says is all there is.
      last.api_version = parsed->kind->ApiVersion();
      last.kind = parsed->kind->kind;
      last.metadata.namespace_ = parsed->namespace_;
      last.metadata.name = parsed->name;
    }
    last.metadata.resource_version = c.revision;
    c.object = std::make_shared<const api::Object>(std::move(last));
    return c;
  }
  auto now = DecodeKv(kv);
  if (!now.ok()) {
    base::Logger("store")->error("etcd watch skipped an event error={}", now.status().ToString());
    return std::nullopt;
  }
  c.type = Int(kv, "create_revision") == c.revision ? EventType::kAdded : EventType::kModified;
  c.object = std::make_shared<const api::Object>(std::move(now->object));
  c.previous = std::move(previous);
  return c;
}

void RunWatch(const std::shared_ptr<WatchState>& state) {
  for (const Change& c : state->snapshot) state->Deliver(c);
  state->snapshot.clear();
  state->snapshot.shrink_to_fit();
  // When the current run of failed (re)connections began; none while a stream answers. An idle
  // stream sees no messages, so only failures in a row count towards giving up.
  std::optional<std::chrono::steady_clock::time_point> failing_since;
  auto backoff = 50ms;
  while (!state->cancelled.load()) {
    Status final_status;
    api::Json request = {{"key", B64(state->key)},
                         {"range_end", B64(state->range_end)},
                         {"start_revision", std::to_string(state->next_revision)},
                         {"prev_kv", true}};
    Status s = state->client->Watch(request, state->canceller, [&](const api::Json& result) {
      failing_since.reset();  // every stream starts with a "created" message
      backoff = 50ms;
      if (result.value("canceled", false)) {
        int64_t compacted = Int(result, "compact_revision");
        final_status =
            compacted > 0
                ? rules::WatchTooOld(state->next_revision - 1, compacted)
                : UnavailableError(fmt::format("etcd cancelled the watch: {}",
                                               result.value("cancel_reason", std::string("?"))));
        return false;
      }
      auto events = result.find("events");
      if (events == result.end()) return true;
      for (const auto& e : *events) {
        int64_t rev = Int(e.value("kv", api::Json::object()), "mod_revision");
        if (auto change = ToChange(*state->keys, e)) state->Deliver(*change);
        state->next_revision = std::max(state->next_revision, rev + 1);
      }
      return !state->cancelled.load();
    });
    if (state->cancelled.load()) return;
    if (state->store_closing.load()) {
      state->Close(UnavailableError("the store is shutting down"));
      return;
    }
    if (!final_status.ok()) {
      state->Close(final_status);
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!failing_since) failing_since = now;
    if (now - *failing_since > state->give_up_after) {
      state->Close(UnavailableError(fmt::format("etcd watch lost: {}", s.message())));
      return;
    }
    base::Logger("store")->debug("etcd watch reconnecting from={} error={}", state->next_revision,
                                 s.ToString());
    std::unique_lock lock(state->wait_mu);
    state->wait_cv.wait_for(lock, backoff,
                            [&] { return state->cancelled.load() || state->store_closing.load(); });
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, 1000ms);
  }
}

class EtcdSubscription final : public Subscription {
 public:
  explicit EtcdSubscription(std::shared_ptr<WatchState> state) : state_(std::move(state)) {
    thread_ = std::thread([state = state_] { RunWatch(state); });
  }
  ~EtcdSubscription() override {
    Cancel();
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();  // destroyed from its own callback: the thread ends by itself
    } else if (thread_.joinable()) {
      thread_.join();
    }
  }

  void Cancel() override {
    CancelAsync();
    // Wait for a delivery in flight to finish, unless this is that delivery.
    if (state_->delivering.load() == std::this_thread::get_id()) return;
    std::lock_guard lock(state_->mu);
  }

  void CancelAsync() override {
    if (state_->cancelled.exchange(true)) return;
    state_->Stop();
  }

 private:
  std::shared_ptr<WatchState> state_;
  std::thread thread_;
};

}  // namespace

void EndWatch(const std::shared_ptr<WatchState>& state) {
  if (!state) return;
  state->store_closing = true;
  state->Stop();
}

Result<std::unique_ptr<Subscription>> EtcdStoreImpl::Subscribe(const api::KindInfo* kind,
                                                               WatchOptions options,
                                                               WatchSink sink) {
  if (kind && !kind->namespaced) options.namespace_.clear();
  auto state = std::make_shared<WatchState>();
  state->kind_key = kind ? kind->GroupKind() : "";
  state->key = kind ? keys_.KindPrefix(*kind, options.namespace_) : keys_.All();
  state->range_end = PrefixEnd(state->key);
  state->client = client_;
  state->keys = std::make_shared<const Keys>(keys_);
  state->give_up_after = options_.request_timeout;
  if (!options.resource_version) {
    // The current objects as ADDED, at one revision, then every change after it.
    int64_t at = 0;
    std::string from = state->key;
    while (true) {
      ASSIGN_OR_RETURN(api::Json range, Range(from, state->range_end, at, 500));
      if (at == 0) at = Int(range.value("header", api::Json::object()), "revision");
      const api::Json kvs = range.value("kvs", api::Json::array());
      for (const auto& kv : kvs) {
        auto parsed = keys_.Parse(FromB64(kv, "key"));
        if (!parsed) continue;
        ASSIGN_OR_RETURN(StoredObject stored, DecodeKv(kv));
        state->snapshot.push_back(
            Change{stored.revision, EventType::kAdded, parsed->kind->GroupKind(),
                   std::make_shared<const api::Object>(std::move(stored.object)), nullptr,
                   /*snapshot=*/true});
      }
      if (!range.value("more", false) || kvs.empty()) break;
      from = FromB64(kvs.back(), "key") + std::string(1, '\0');
    }
    state->next_revision = at + 1;
  } else {
    const int64_t from = *options.resource_version;
    const int64_t current = CurrentRevision();
    if (from > current) return rules::WatchFromTheFuture(from, current);
    if (from < compacted_.load()) return rules::WatchTooOld(from, compacted_.load());
    if (from > 0) {
      // etcd refuses a range at a compacted revision: the watch would be cancelled at once.
      auto probe = Range(state->key, state->range_end, from, 1, /*keys_only=*/true);
      if (!probe.ok()) {
        if (probe.status().code() == StatusCode::kOutOfRange &&
            probe.status().message().find("compacted") != std::string::npos) {
          return rules::WatchTooOld(from, std::max(compacted_.load(), from + 1));
        }
        return probe.status();
      }
    }
    state->next_revision = from + 1;
  }
  state->options = std::move(options);
  state->sink = std::move(sink);
  {
    std::lock_guard lock(watches_mu_);
    std::erase_if(watches_, [](const std::weak_ptr<WatchState>& w) { return w.expired(); });
    watches_.push_back(state);
  }
  return std::unique_ptr<Subscription>(new EtcdSubscription(std::move(state)));
}

}  // namespace warren::store::etcd
