#pragma once

// Private to the etcd backend: the store class shared by etcd_store.cc (opening, reads,
// compaction, garbage collection), etcd_writes.cc (the write rules carried out as
// compare-and-swap transactions) and etcd_watch.cc (subscriptions).

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/etcd/etcd_client.h"
#include "store/etcd/keys.h"
#include "store/etcd_store.h"
#include "store/watch_hub.h"
#include "store/write_rules.h"

namespace warren::store::etcd {

// A key-value of a range or watch as an object (resourceVersion = mod_revision).
Result<StoredObject> DecodeKv(const api::Json& kv);

// What a compare-and-swap write came to.
struct Committed {
  bool succeeded = false;
  int64_t revision = 0;                 // of the write; on failure, etcd's current revision
  std::optional<StoredObject> current;  // on failure: the key's state now (nullopt: absent)
};

class EtcdStoreImpl final : public EtcdStore {
 public:
  EtcdStoreImpl(EtcdStoreOptions options, const api::KindRegistry& kinds,
                std::shared_ptr<EtcdClient> client);
  ~EtcdStoreImpl() override;

  Status Start();

  // Store.
  Result<api::Object> Get(const api::KindInfo& kind, std::string_view ns,
                          std::string_view name) override;
  Result<ObjectList> List(const api::KindInfo& kind, const ListOptions& options) override;
  Result<api::Object> Create(api::Object object) override;
  Result<api::Object> Update(api::Object object, Subresource subresource) override;
  Result<api::Object> Patch(const api::KindInfo& kind, std::string_view ns, std::string_view name,
                            const api::Json& merge_patch, Subresource subresource) override;
  Result<api::Object> Delete(const api::KindInfo& kind, std::string_view ns, std::string_view name,
                             const DeleteOptions& options) override;
  Result<std::unique_ptr<Subscription>> Subscribe(const api::KindInfo* kind, WatchOptions options,
                                                  WatchSink sink) override;
  int64_t CurrentRevision() override;

  // EtcdStore.
  Status Compact() override;
  int64_t CompactedRevision() override { return compacted_.load(); }
  void WaitForGarbageCollection() override;

  void NoteCompacted(int64_t revision);

 private:
  // ---- Reads (etcd_store.cc) ----
  Result<CallResult> Call(std::string_view path, const api::Json& request);
  Result<std::optional<StoredObject>> Load(const api::KindInfo& kind, std::string_view ns,
                                           std::string_view name);
  // Ranges [key, range_end) at `revision` (0 = now); keys_only skips values.
  Result<api::Json> Range(const std::string& key, const std::string& range_end, int64_t revision,
                          int64_t limit, bool keys_only = false);

  // ---- Writes (etcd_writes.cc) ----
  // Carries out what the rules decided as one transaction guarded by `previous`'s revision
  // (create_revision == 0 without one). Index keys change in the same transaction.
  Result<Committed> Commit(const api::KindInfo& kind, const StoredObject* previous,
                           rules::Write& write);
  // The update loop shared by Update and Patch: `next` turns the stored object into the write;
  // a lost race is retried unless `explicit_revision` (then Conflict).
  Result<api::Object> ReadModifyWrite(
      const api::KindInfo& kind, std::string_view ns, std::string_view name, bool explicit_revision,
      const std::function<Result<rules::Write>(const StoredObject&)>& next);
  Status OrphanDependents(std::string_view owner_uid);
  Result<std::vector<std::string>> DependentKeys(std::string_view owner_uid);
  void NoteCommit(int64_t revision);

  // ---- Garbage collection and compaction (etcd_store.cc) ----
  void EnqueueGc(std::vector<std::string> object_keys);
  void GcLoop();
  Status Collect(const std::string& object_key);
  Status QueueOrphansAtStartup();
  void CompactLoop();
  int64_t CompactionTarget();

  EtcdStoreOptions options_;
  const api::KindRegistry& kinds_;
  base::Clock* clock_;
  Keys keys_;
  // Shared with watch threads, which may outlive a moment of the store's shutdown.
  std::shared_ptr<EtcdClient> client_;
  std::atomic<int64_t> revision_{0};   // the newest revision any answer showed
  std::atomic<int64_t> compacted_{0};  // the newest compaction known

  std::mutex marks_mu_;
  // (revision, commit time) at most every 100 ms, for finding the compaction horizon.
  std::deque<std::pair<int64_t, base::WallTime>> marks_;  // guarded by marks_mu_

  std::thread gc_thread_;
  std::mutex gc_mu_;
  std::condition_variable gc_cv_;
  std::deque<std::string> gc_queue_;  // guarded by gc_mu_: object keys to look at
  bool gc_busy_ = false;              // guarded by gc_mu_
  bool stop_ = false;                 // guarded by gc_mu_ (also ends the compactor)

  std::thread compact_thread_;

  // Watches (etcd_watch.cc): one feed stream into a hub that fans out to every subscriber.
  std::shared_ptr<WatchHub> Hub();
  void StartFeed(int64_t from);
  void StopFeed();
  void FeedLoop(int64_t from);
  std::mutex hub_mu_;
  std::shared_ptr<WatchHub> hub_;       // guarded by hub_mu_; replaced when the feed starts over
  std::atomic<int64_t> published_{0};   // the newest revision the feed handed the hub
  std::atomic<int64_t> feed_start_{0};  // the revision the feed (last) started after
  std::atomic<bool> feed_stop_{false};
  StreamCanceller feed_canceller_;
  std::thread feed_thread_;
};

}  // namespace warren::store::etcd
