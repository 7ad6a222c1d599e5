#pragma once

// Private to the SQLite backend: the store class shared by sqlite_store.cc (threads, reads,
// batching), write_ops.cc (the write rules of write_rules.h carried out inside a transaction)
// and txn.cc.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/sqlite/db.h"
#include "store/sqlite/object_cache.h"
#include "store/sqlite_store.h"
#include "store/watch_hub.h"
#include "store/write_rules.h"

namespace warren::store::sqlite {

class SqliteStoreImpl;

using store::StoredObject;

// The writer thread's view of one batch transaction. Writes go through Put and Remove, which
// assign revisions, append events and keep the indexes; the changes are published and the
// removed uids garbage-collected only if the batch commits.
class Txn {
 public:
  Txn(SqliteStoreImpl& store, Connection& conn, int64_t& revision, base::WallTime now)
      : store_(store), conn_(conn), revision_(revision), now_(now) {}

  base::WallTime now() const { return now_; }
  SqliteStoreImpl& store() const { return store_; }

  // The current state of a key (including writes earlier in this batch), or nullopt.
  Result<std::optional<StoredObject>> Load(const api::KindInfo& kind, std::string_view ns,
                                           std::string_view name);
  Result<bool> UidExists(std::string_view uid);
  // Keys whose ownerReferences name `owner_uid`.
  struct Key {
    std::string kind_key, namespace_, name;
  };
  Result<std::vector<Key>> Dependents(std::string_view owner_uid);

  // Stores `object` as the new state of its key with a fresh revision (written into it).
  // `previous` is the state it replaces (null for a create).
  Status Put(const api::KindInfo& kind, api::Object& object, const StoredObject* previous);
  // Deletes the key; `last` (its final state) gets the deletion's revision.
  Status Remove(const api::KindInfo& kind, api::Object& last, const StoredObject& previous);

  // Set when a statement failed half way: the batch must roll back.
  bool broken() const { return broken_; }

  std::vector<Change>& changes() { return changes_; }
  std::vector<Key>& gc_checks() { return gc_checks_; }

 private:
  Status Broken(Status s) {
    if (!s.ok()) broken_ = true;
    return s;
  }
  Status UpdateOwnerRefs(const api::KindInfo& kind, const api::Object& object,
                         const api::Object* previous);
  std::shared_ptr<const api::Object> Loaded(const StoredObject& stored) const;

  SqliteStoreImpl& store_;
  Connection& conn_;
  int64_t& revision_;
  base::WallTime now_;
  bool broken_ = false;
  std::vector<Change> changes_;
  std::vector<Key> gc_checks_;  // dependents to look at once this commits
  // What Load returned: the watch event's `previous` shares it instead of a copy.
  std::vector<std::shared_ptr<const api::Object>> loaded_;
};

class SqliteStoreImpl final : public SqliteStore {
 public:
  SqliteStoreImpl(SqliteStoreOptions options, const api::KindRegistry& kinds);
  ~SqliteStoreImpl() override;

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
  int64_t CurrentRevision() override { return committed_revision_.load(); }

  // SqliteStore.
  Status Compact() override;
  int64_t CompactedRevision() override { return compacted_revision_.load(); }
  void WaitForGarbageCollection() override;

  // For Txn and the write ops.
  const SqliteStoreOptions& options() const { return options_; }
  const api::KindInfo* KindByKey(std::string_view kind_key) const;
  base::Clock& clock() const { return *clock_; }
  // The key's current object on `conn` (object null when there is none): its revision from
  // `objects`, the object from `uncommitted` (the writer's open batch), the cache, or its
  // event, parsed.
  struct Current {
    std::shared_ptr<const api::Object> object;
    int64_t revision = 0;
  };
  Result<Current> ReadCurrent(Connection& conn, const std::string& kind_key, std::string_view ns,
                              std::string_view name, const std::vector<Change>& uncommitted);

  // Runs `fn` on the writer thread inside the next batch; returns its result once committed.
  using WriteFn = std::function<Result<api::Object>(Txn&)>;
  Result<api::Object> Submit(WriteFn fn);

  // The garbage collector's decision for one dependent whose owners may be gone, carried out
  // inside the writer's transaction (write_ops.cc).
  static Status CollectLocked(Txn& txn, const Txn::Key& key);

 private:
  struct PendingWrite {
    WriteFn fn;
    std::promise<Result<api::Object>> done;
  };

  // A reader connection borrowed from the pool.
  class ReaderLease {
   public:
    ReaderLease(SqliteStoreImpl& store, std::unique_ptr<Connection> conn)
        : store_(store), conn_(std::move(conn)) {}
    ~ReaderLease();
    ReaderLease(const ReaderLease&) = delete;
    ReaderLease& operator=(const ReaderLease&) = delete;
    Connection& operator*() { return *conn_; }
    Connection* operator->() { return conn_.get(); }

   private:
    SqliteStoreImpl& store_;
    std::unique_ptr<Connection> conn_;
  };
  ReaderLease AcquireReader();

  Result<std::unique_ptr<Connection>> OpenConnection(bool writer);
  void WriterLoop();
  void RunBatch(std::vector<std::unique_ptr<PendingWrite>>& batch);
  int64_t CompactionTarget();
  Status CompactLocked(int64_t target, int64_t max_span);
  void MaybeCompact();
  void CheckpointLoop();
  void GcLoop();
  void EnqueueGc(std::vector<Txn::Key> keys);
  Status QueueOrphansAtStartup();
  Result<int64_t> ReplayInto(Connection& conn, const std::string& kind_key,
                             const WatchOptions& options, const WatchHub::Emit& emit);

  SqliteStoreOptions options_;
  const api::KindRegistry& kinds_;
  base::Clock* clock_;
  std::map<std::string, const api::KindInfo*, std::less<>> kinds_by_key_;

  // Writer thread state.
  std::unique_ptr<Connection> writer_;  // used only by the writer thread
  int64_t revision_ = 0;                // writer thread only
  std::atomic<int64_t> committed_revision_{0};
  std::atomic<int64_t> compacted_revision_{0};
  base::MonoTime next_compaction_{};  // writer thread only
  // (revision, commit time) at most every 100 ms, for finding the compaction horizon.
  std::deque<std::pair<int64_t, base::WallTime>> commit_marks_;  // writer thread only
  int64_t startup_compaction_target_ = 0;                        // writer thread only
  int64_t pending_compacted_ = 0;  // writer thread only: horizon of the open transaction
  std::thread writer_thread_;
  std::mutex write_mu_;
  std::condition_variable write_cv_;
  std::deque<std::unique_ptr<PendingWrite>> write_queue_;  // guarded by write_mu_
  bool stopping_ = false;                                  // guarded by write_mu_
  bool writer_stop_ = false;                               // guarded by write_mu_

  // Readers.
  std::mutex reader_mu_;
  std::condition_variable reader_cv_;
  std::vector<std::unique_ptr<Connection>> readers_;  // guarded by reader_mu_ (idle ones)

  // WAL checkpoints.
  std::unique_ptr<Connection> checkpointer_;  // checkpoint thread only
  std::thread checkpoint_thread_;
  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  int wal_pages_ = 0;             // guarded by checkpoint_mu_
  bool checkpoint_stop_ = false;  // guarded by checkpoint_mu_

  // Garbage collection.
  std::thread gc_thread_;
  std::mutex gc_mu_;
  std::condition_variable gc_cv_;
  std::deque<Txn::Key> gc_queue_;  // guarded by gc_mu_
  bool gc_busy_ = false;           // guarded by gc_mu_
  bool gc_stop_ = false;           // guarded by gc_mu_

  WatchHub hub_;
  ObjectCache object_cache_;

  friend class Txn;

 public:
  // Called by SQLite's WAL hook on the writer thread after each commit.
  void NoteWalPages(int pages);
};

}  // namespace warren::store::sqlite
