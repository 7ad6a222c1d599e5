// Watches: one etcd watch stream (the feed) on the whole prefix, on a thread of its own, turns
// every committed change into a Change for a WatchHub, which fans them out to subscribers with
// its replay-then-live hand-off. A subscriber's replay is the current objects (a range at one
// revision) or the history after its revision, read by a watch of its own from there up to
// the last revision the feed published; from then on the hub's live changes follow, with
// nothing lost or repeated at the seam. A broken stream (a member gone) is reopened on another
// member from the next revision; a feed that finds its next revision compacted ends every
// subscription with OutOfRange (410 Gone; they list again) and starts a new hub from now.

#include <fmt/format.h>

#include <optional>
#include <thread>

#include "api/object_codec.h"
#include "base/log.h"
#include "store/etcd/etcd_store_impl.h"
#include "store/watch_hub.h"

namespace warren::store::etcd {

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

using namespace std::chrono_literals;

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

// Reads the changes of one etcd watch on `key`..`range_end` from `next` into `on_changes`,
// reopening it on another member when a stream breaks, until `done` says so, `stop` is set,
// or no member answered for `give_up_after`. A compacted `next` is OutOfRange.
Status Follow(EtcdClient& client, const Keys& keys, const std::string& key,
              const std::string& range_end, int64_t& next, StreamCanceller& canceller,
              const std::atomic<bool>& stop, std::chrono::milliseconds give_up_after,
              const std::function<bool(std::vector<Change>& batch, int64_t last)>& on_changes) {
  std::optional<std::chrono::steady_clock::time_point> failing_since;
  auto backoff = 50ms;
  while (!stop.load()) {
    Status final_status;
    bool done = false;
    api::Json request = {{"key", B64(key)},
                         {"range_end", B64(range_end)},
                         {"start_revision", std::to_string(next)},
                         {"prev_kv", true}};
    Status s = client.Watch(request, canceller, [&](const api::Json& result) {
      failing_since.reset();  // every stream starts with a "created" message
      backoff = 50ms;
      if (result.value("canceled", false)) {
        int64_t compacted = Int(result, "compact_revision");
        final_status =
            compacted > 0
                ? rules::WatchTooOld(next - 1, compacted)
                : UnavailableError(fmt::format("etcd cancelled the watch: {}",
                                               result.value("cancel_reason", std::string("?"))));
        return false;
      }
      auto events = result.find("events");
      if (events == result.end() || events->empty()) return true;
      std::vector<Change> batch;
      for (const auto& e : *events) {
        if (auto change = ToChange(keys, e)) batch.push_back(std::move(*change));
        next = std::max(next, Int(e.value("kv", api::Json::object()), "mod_revision") + 1);
      }
      done = !on_changes(batch, next - 1);
      return !done && !stop.load();
    });
    if (done) return Status::Ok();
    if (stop.load()) break;
    if (!final_status.ok()) return final_status;
    const auto now = std::chrono::steady_clock::now();
    if (!failing_since) failing_since = now;
    if (now - *failing_since > give_up_after) {
      return UnavailableError(fmt::format("etcd watch lost: {}", s.message()));
    }
    base::Logger("store")->debug("etcd watch reconnecting from={} error={}", next, s.ToString());
    std::this_thread::sleep_for(backoff);
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, 1000ms);
  }
  return CancelledError("watch stopped");
}

}  // namespace

std::shared_ptr<WatchHub> EtcdStoreImpl::Hub() {
  std::lock_guard lock(hub_mu_);
  return hub_;
}

void EtcdStoreImpl::StartFeed(int64_t from) {
  {
    std::lock_guard lock(hub_mu_);
    hub_ = std::make_shared<WatchHub>();
  }
  published_ = from;
  feed_start_ = from;
  feed_thread_ = std::thread([this, from] { FeedLoop(from); });
}

void EtcdStoreImpl::StopFeed() {
  feed_stop_ = true;
  feed_canceller_.Cancel();
  if (feed_thread_.joinable()) feed_thread_.join();
  if (auto hub = Hub()) hub->Close(UnavailableError("the store is shutting down"));
}

void EtcdStoreImpl::FeedLoop(int64_t from) {
  int64_t next = from + 1;
  while (!feed_stop_.load()) {
    std::shared_ptr<WatchHub> hub = Hub();
    // The feed never gives up on its own: subscribers wait for it through an outage and then
    // see every change they missed.
    Status s = Follow(*client_, keys_, keys_.All(), PrefixEnd(keys_.All()), next, feed_canceller_,
                      feed_stop_, std::chrono::hours(24 * 365),
                      [&](std::vector<Change>& batch, int64_t last) {
                        // Published before the hub has the batch: a subscriber that reads it
                        // replays up to here, one that does not is registered in time to get
                        // the batch live.
                        published_ = last;
                        hub->Publish(std::move(batch));
                        return true;
                      });
    if (feed_stop_.load()) return;
    if (s.code() != StatusCode::kOutOfRange) {
      // etcd cancelled the stream for another reason: open it again, without spinning.
      base::Logger("store")->warn("etcd watch feed ended error={}", s.ToString());
      std::this_thread::sleep_for(100ms);
      continue;
    }
    // The feed lost its place in the history (it fell behind a compaction): every subscriber
    // must list again, and the feed starts over from now with a new hub.
    base::Logger("store")->warn("etcd watch feed lost its place error={}", s.ToString());
    int64_t now = CurrentRevision();
    {
      // Where the new feed starts is set before its hub is visible: a subscriber that finds
      // the new hub replays up to `now`, never up to the old feed's last batch (a gap).
      std::lock_guard lock(hub_mu_);
      feed_start_ = now;
      published_ = now;
      hub_ = std::make_shared<WatchHub>();
    }
    hub->Close(s);
    next = now + 1;
  }
}

Result<std::unique_ptr<Subscription>> EtcdStoreImpl::Subscribe(const api::KindInfo* kind,
                                                               WatchOptions options,
                                                               WatchSink sink) {
  if (kind && !kind->namespaced) options.namespace_.clear();
  std::string kind_key = kind ? kind->GroupKind() : "";
  const std::string prefix = kind ? keys_.KindPrefix(*kind, options.namespace_) : keys_.All();
  // One object's key when the selector pins its name (and a namespaced kind its namespace).
  const std::string pinned = PinnedName(options);
  const std::string one_key =
      kind && !pinned.empty() && (!kind->namespaced || !options.namespace_.empty())
          ? keys_.Object(*kind, options.namespace_, pinned)
          : std::string();
  std::shared_ptr<WatchHub> hub = Hub();
  if (!hub) return UnavailableError("the store is shutting down");
  if (!options.resource_version) {
    return hub->Subscribe(
        kind_key, std::move(options), std::move(sink),
        [&](const WatchHub::Emit& emit) -> Result<int64_t> {
          // The current objects as ADDED, at one revision, which is at least
          // every revision the feed published (a linearizable read).
          int64_t at = 0;
          std::string from = one_key.empty() ? prefix : one_key;
          const std::string end =
              one_key.empty() ? PrefixEnd(prefix) : one_key + std::string(1, '\0');
          while (true) {
            ASSIGN_OR_RETURN(api::Json range, Range(from, end, at, 500));
            if (at == 0) {
              at = Int(range.value("header", api::Json::object()), "revision");
            }
            const api::Json kvs = range.value("kvs", api::Json::array());
            for (const auto& kv : kvs) {
              auto parsed = keys_.Parse(FromB64(kv, "key"));
              if (!parsed) continue;
              ASSIGN_OR_RETURN(StoredObject stored, DecodeKv(kv));
              emit(Change{stored.revision, EventType::kAdded, parsed->kind->GroupKind(),
                          std::make_shared<const api::Object>(std::move(stored.object)), nullptr,
                          /*snapshot=*/true});
            }
            if (!range.value("more", false) || kvs.empty()) break;
            from = FromB64(kvs.back(), "key") + std::string(1, '\0');
          }
          return at;
        });
  }
  const int64_t from = *options.resource_version;
  const int64_t current = CurrentRevision();
  if (from > current) return rules::WatchFromTheFuture(from, current);
  if (from < compacted_.load()) return rules::WatchTooOld(from, compacted_.load());
  return hub->Subscribe(
      kind_key, std::move(options), std::move(sink),
      [&](const WatchHub::Emit& emit) -> Result<int64_t> {
        // Registered with the hub by now: what the feed publishes from here
        // reaches this subscriber live, so the history up to what it has
        // published is enough.
        int64_t until = published_.load();
        if (until <= from) return from;
        if (until == feed_start_.load()) {
          // The feed has published nothing since it started, and the revision
          // it started at may hold no change under the prefix (a fresh etcd,
          // another client's write), which the replay would wait for forever.
          // A marker write makes a change it can stop at.
          ASSIGN_OR_RETURN(
              CallResult marked,
              Call("/v3/kv/put", {{"key", B64(keys_.All() + "_feed")}, {"value", ""}}));
          until = Int(marked.body.value("header", api::Json::object()), "revision");
        }
        int64_t next = from + 1;
        std::atomic<bool> stop{false};
        StreamCanceller canceller;
        Status s =
            Follow(*client_, keys_, keys_.All(), PrefixEnd(keys_.All()), next, canceller, stop,
                   options_.request_timeout, [&](std::vector<Change>& batch, int64_t last) {
                     for (const Change& c : batch) emit(c);
                     return last < until;
                   });
        if (s.code() == StatusCode::kOutOfRange) NoteCompacted(from + 1);
        RETURN_IF_ERROR(s);
        return next - 1;
      });
}

}  // namespace warren::store::etcd
