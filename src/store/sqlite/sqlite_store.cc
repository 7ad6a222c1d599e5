#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>
#include <string_view>

#include "api/object_codec.h"
#include "base/log.h"
#include "base/scope_guard.h"
#include "store/continue_token.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/sqlite_store_impl.h"

namespace warren::store {

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(SqliteStoreOptions options,
                                                       const api::KindRegistry& kinds) {
  auto store = std::make_unique<sqlite::SqliteStoreImpl>(std::move(options), kinds);
  RETURN_IF_ERROR(store->Start());
  return std::unique_ptr<SqliteStore>(std::move(store));
}

namespace sqlite {
namespace {

using namespace std::chrono_literals;

constexpr int kCheckpointPages = 1000;
// Unavailable for two reasons: this one is no failure worth a warning, a disk I/O error is.
constexpr std::string_view kShuttingDown = "the store is shutting down";
constexpr int64_t kCompactionStep = 5000;  // revisions compacted per writer pause at most
constexpr auto kCompactionInterval = 5s;
constexpr int kReplayPage = 1000;

int WalHook(void* arg, sqlite3*, const char*, int pages) {
  static_cast<SqliteStoreImpl*>(arg)->NoteWalPages(pages);
  return SQLITE_OK;
}

std::string_view NamespaceFor(const api::KindInfo& kind, std::string_view ns) {
  return kind.namespaced ? ns : std::string_view();
}

EventType FromStored(int64_t type) {
  switch (type) {
    case kStoredAdded:
      return EventType::kAdded;
    case kStoredDeleted:
      return EventType::kDeleted;
    default:
      return EventType::kModified;
  }
}

// `key` ("namespace/name"), when the caller knows it, names the object in the error.
Result<std::shared_ptr<const api::Object>> ParseDoc(std::string_view doc,
                                                    std::string_view key = {}) {
  auto obj = api::ObjectFromJsonText(doc);
  if (!obj.ok()) {
    return DataLossError(fmt::format("stored object {}{}does not parse: {}", key,
                                     key.empty() ? "" : " ", obj.status().message()));
  }
  return std::make_shared<const api::Object>(std::move(*obj));
}

bool MatchesList(const api::Object& obj, const ListOptions& options) {
  return options.label_selector.Matches(obj.metadata.labels) && options.field_selector.Matches(obj);
}

// Keeps a read transaction open for a consistent snapshot across several statements.
class ReadTransaction {
 public:
  explicit ReadTransaction(Connection& conn) : conn_(conn) {}
  Status Begin() {
    RETURN_IF_ERROR(conn_.Run("BEGIN"));
    open_ = true;
    return Status::Ok();
  }
  ~ReadTransaction() {
    if (open_) conn_.Run("COMMIT").IgnoreError();
  }

 private:
  Connection& conn_;
  bool open_ = false;
};

}  // namespace

SqliteStoreImpl::SqliteStoreImpl(SqliteStoreOptions options, const api::KindRegistry& kinds)
    : options_(std::move(options)),
      kinds_(kinds),
      clock_(options_.clock ? options_.clock : &base::RealClock()),
      object_cache_(options_.object_cache_entries) {
  for (const api::KindInfo* k : kinds_.All()) kinds_by_key_[k->GroupKind()] = k;
}

const api::KindInfo* SqliteStoreImpl::KindByKey(std::string_view kind_key) const {
  auto it = kinds_by_key_.find(kind_key);
  return it == kinds_by_key_.end() ? nullptr : it->second;
}

Result<std::unique_ptr<Connection>> SqliteStoreImpl::OpenConnection(bool writer) {
  ASSIGN_OR_RETURN(auto conn, Connection::Open(options_.path));
  RETURN_IF_ERROR(conn->Exec("PRAGMA busy_timeout = 10000"));
  RETURN_IF_ERROR(conn->Exec("PRAGMA journal_mode = WAL"));
  RETURN_IF_ERROR(conn->Exec("PRAGMA temp_store = MEMORY"));
  if (writer) {
    RETURN_IF_ERROR(conn->Exec(options_.sync == SqliteStoreOptions::Sync::kFull
                                   ? "PRAGMA synchronous = FULL"
                                   : "PRAGMA synchronous = NORMAL"));
    // Checkpoints run on their own thread so a commit never waits for one.
    RETURN_IF_ERROR(conn->Exec("PRAGMA wal_autocheckpoint = 0"));
    RETURN_IF_ERROR(conn->Exec("PRAGMA cache_size = -65536"));  // 64 MiB
  }
  return conn;
}

Status SqliteStoreImpl::Start() {
  if (options_.path.empty()) return InvalidArgumentError("store path is empty");
  ASSIGN_OR_RETURN(writer_, OpenConnection(/*writer=*/true));
  RETURN_IF_ERROR(CreateSchema(*writer_));
  ASSIGN_OR_RETURN(revision_, writer_->QueryInt("SELECT value FROM meta WHERE key = 'revision'"));
  ASSIGN_OR_RETURN(int64_t compacted,
                   writer_->QueryInt("SELECT value FROM meta WHERE key = 'compacted'"));
  committed_revision_ = revision_;
  compacted_revision_ = compacted;
  {
    // History that aged out while the store was closed; later commits are tracked in memory.
    int64_t cutoff_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            (clock_->Now() - options_.history).time_since_epoch())
                            .count();
    ASSIGN_OR_RETURN(auto q, writer_->Prepare("SELECT coalesce(max(rv), 0) FROM events WHERE "
                                              "rv > ?1 AND ts < ?2"));
    q.Bind(1, compacted).Bind(2, cutoff_ms);
    ASSIGN_OR_RETURN(bool row, q.Step());
    startup_compaction_target_ = row ? q.Int(0) : 0;
  }
  sqlite3_wal_hook(writer_->raw(), WalHook, this);
  for (int i = 0; i < std::max(1, options_.reader_connections); ++i) {
    ASSIGN_OR_RETURN(auto reader, OpenConnection(/*writer=*/false));
    readers_.push_back(std::move(reader));
  }
  ASSIGN_OR_RETURN(checkpointer_, OpenConnection(/*writer=*/false));
  RETURN_IF_ERROR(QueueOrphansAtStartup());
  next_compaction_ = clock_->Monotonic();
  writer_thread_ = std::thread([this] { WriterLoop(); });
  checkpoint_thread_ = std::thread([this] { CheckpointLoop(); });
  gc_thread_ = std::thread([this] { GcLoop(); });
  base::Logger("store")->info("opened path={} revision={} compacted={} sync={}", options_.path,
                              revision_, compacted,
                              options_.sync == SqliteStoreOptions::Sync::kFull ? "full" : "normal");
  return Status::Ok();
}

SqliteStoreImpl::~SqliteStoreImpl() {
  {
    std::lock_guard lock(gc_mu_);
    gc_stop_ = true;
  }
  gc_cv_.notify_all();
  if (gc_thread_.joinable()) gc_thread_.join();
  {
    std::lock_guard lock(write_mu_);
    stopping_ = true;  // new writes are refused; queued ones still run
    writer_stop_ = true;
  }
  write_cv_.notify_all();
  if (writer_thread_.joinable()) writer_thread_.join();
  hub_.Close(UnavailableError(std::string(kShuttingDown)));
  {
    std::lock_guard lock(checkpoint_mu_);
    checkpoint_stop_ = true;
  }
  checkpoint_cv_.notify_all();
  if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
  if (writer_) sqlite3_wal_hook(writer_->raw(), nullptr, nullptr);
}

// ---- Readers ----

SqliteStoreImpl::ReaderLease::~ReaderLease() {
  {
    std::lock_guard lock(store_.reader_mu_);
    store_.readers_.push_back(std::move(conn_));
  }
  store_.reader_cv_.notify_one();
}

SqliteStoreImpl::ReaderLease SqliteStoreImpl::AcquireReader() {
  std::unique_lock lock(reader_mu_);
  reader_cv_.wait(lock, [&] { return !readers_.empty(); });
  auto conn = std::move(readers_.back());
  readers_.pop_back();
  return ReaderLease(*this, std::move(conn));
}

Result<SqliteStoreImpl::Current> SqliteStoreImpl::ReadCurrent(
    Connection& conn, const std::string& kind_key, std::string_view ns, std::string_view name,
    const std::vector<Change>& uncommitted) {
  int64_t revision = 0;
  {
    ASSIGN_OR_RETURN(auto q, conn.Prepare("SELECT rv FROM objects WHERE kind = ?1 AND "
                                          "namespace = ?2 AND name = ?3"));
    q.Bind(1, kind_key).Bind(2, ns).Bind(3, name);
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return Current{};
    revision = q.Int(0);
  }
  // Written earlier in the writer's open batch: not in the cache until that commits.
  for (auto it = uncommitted.rbegin(); it != uncommitted.rend(); ++it) {
    if (it->revision == revision) return Current{it->object, revision};
  }
  if (auto cached = object_cache_.Find(kind_key, ns, name, revision)) {
    return Current{std::move(cached), revision};
  }
  ASSIGN_OR_RETURN(auto q, conn.Prepare("SELECT doc FROM events WHERE rv = ?1"));
  q.Bind(1, revision);
  ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) {
    return DataLossError(
        fmt::format("stored object {}/{}: no event holds its revision {}", ns, name, revision));
  }
  ASSIGN_OR_RETURN(auto parsed, ParseDoc(q.Text(0), fmt::format("{}/{}", ns, name)));
  object_cache_.Put(kind_key, parsed);
  return Current{std::move(parsed), revision};
}

Result<api::Object> SqliteStoreImpl::Get(const api::KindInfo& kind, std::string_view ns,
                                         std::string_view name) {
  auto reader = AcquireReader();
  // The key's revision and, when the cache does not hold it, its document: one snapshot.
  ReadTransaction txn(*reader);
  RETURN_IF_ERROR(txn.Begin());
  ASSIGN_OR_RETURN(Current current, ReadCurrent(*reader, kind.GroupKind(), NamespaceFor(kind, ns),
                                                name, /*uncommitted=*/{}));
  if (!current.object) return rules::NotFound(kind, name);
  return *current.object;
}

Result<ObjectList> SqliteStoreImpl::List(const api::KindInfo& kind, const ListOptions& options) {
  if (options.limit < 0) return InvalidArgumentError("limit must be >= 0");
  std::optional<ContinueToken> token;
  if (!options.continue_token.empty()) {
    ASSIGN_OR_RETURN(auto t, DecodeContinueToken(options.continue_token));
    token = std::move(t);
  }
  std::string ns(NamespaceFor(kind, options.namespace_));
  auto reader = AcquireReader();
  ReadTransaction txn(*reader);
  RETURN_IF_ERROR(txn.Begin());
  ASSIGN_OR_RETURN(int64_t current,
                   reader->QueryInt("SELECT value FROM meta WHERE key = 'revision'"));
  ASSIGN_OR_RETURN(int64_t compacted,
                   reader->QueryInt("SELECT value FROM meta WHERE key = 'compacted'"));
  int64_t at = token ? token->revision : current;
  if (token && at < compacted) {
    return rules::ContinueTooOld(at, compacted);
  }
  if (at > current) return InvalidArgumentError("invalid continue token: revision in the future");
  std::string after_ns = token ? token->namespace_ : "";
  std::string after_name = token ? token->name : "";

  // At the current revision the live table answers; at an older one, the latest event of
  // each key at or before it (deleted keys skipped).
  std::string sql;
  const bool historical = at != current;
  std::string ns_clause = ns.empty() ? "" : " AND namespace = ?5";
  if (!historical) {
    sql =
        "SELECT 0, o.namespace, o.name, e.doc FROM objects o JOIN events e ON e.rv = o.rv "
        "WHERE o.kind = ?1 AND (o.namespace, o.name) > (?2, ?3)" +
        (ns.empty() ? std::string() : std::string(" AND o.namespace = ?5")) +
        " AND ?4 >= 0 ORDER BY o.namespace, o.name";
  } else {
    sql =
        "SELECT type, namespace, name, doc, max(rv) FROM events WHERE kind = ?1 AND "
        "(namespace, name) > (?2, ?3) AND rv <= ?4" +
        ns_clause + " GROUP BY namespace, name ORDER BY namespace, name";
  }
  ASSIGN_OR_RETURN(auto q, reader->Prepare(sql));
  q.Bind(1, kind.GroupKind()).Bind(2, after_ns).Bind(3, after_name).Bind(4, at);
  if (!ns.empty()) q.Bind(5, ns);

  ObjectList list;
  list.resource_version = at;
  while (true) {
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    if (historical && q.Int(0) == kStoredDeleted) continue;
    ASSIGN_OR_RETURN(auto obj, ParseDoc(q.Text(3)));
    if (!MatchesList(*obj, options)) continue;
    if (options.limit > 0 && static_cast<int64_t>(list.items.size()) == options.limit) {
      // One more match exists: the page is full and another follows.
      const api::Object& last = list.items.back();
      list.continue_token = EncodeContinueToken({at, last.metadata.namespace_, last.metadata.name});
      break;
    }
    list.items.push_back(*obj);
  }
  return list;
}

// ---- Writes ----

Result<api::Object> SqliteStoreImpl::Submit(WriteFn fn) {
  auto write = std::make_unique<PendingWrite>();
  write->fn = std::move(fn);
  auto future = write->done.get_future();
  {
    std::lock_guard lock(write_mu_);
    if (stopping_) return UnavailableError(std::string(kShuttingDown));
    write_queue_.push_back(std::move(write));
  }
  write_cv_.notify_one();
  return future.get();
}

void SqliteStoreImpl::WriterLoop() {
  while (true) {
    std::vector<std::unique_ptr<PendingWrite>> batch;
    {
      std::unique_lock lock(write_mu_);
      write_cv_.wait_for(lock, 1s, [&] { return !write_queue_.empty() || writer_stop_; });
      if (write_queue_.empty() && writer_stop_) break;
      while (!write_queue_.empty() && batch.size() < options_.max_batch) {
        batch.push_back(std::move(write_queue_.front()));
        write_queue_.pop_front();
      }
    }
    if (!batch.empty()) RunBatch(batch);
    MaybeCompact();
  }
}

void SqliteStoreImpl::RunBatch(std::vector<std::unique_ptr<PendingWrite>>& batch) {
  const int64_t start_revision = revision_;
  pending_compacted_ = 0;
  std::vector<std::optional<Result<api::Object>>> results(batch.size());
  Txn txn(*this, *writer_, revision_, clock_->Now());
  Status failure = writer_->Run("BEGIN IMMEDIATE");
  if (failure.ok()) {
    for (size_t i = 0; i < batch.size() && !txn.broken(); ++i) {
      try {
        results[i] = batch[i]->fn(txn);
      } catch (const std::exception& e) {
        // A library threw half way through a write: treat the batch as failed.
        failure = InternalError(fmt::format("write failed: {}", e.what()));
        break;
      }
      if (txn.broken()) failure = results[i]->status();
    }
  }
  if (failure.ok() && revision_ != start_revision) {
    auto q = writer_->Prepare("UPDATE meta SET value = ?1 WHERE key = 'revision'");
    failure = q.ok() ? q->Bind(1, revision_).Run() : q.status();
  }
  if (failure.ok()) failure = writer_->Run("COMMIT");
  if (!failure.ok()) {
    writer_->Exec("ROLLBACK").IgnoreError();
    revision_ = start_revision;
    base::Logger("store")->error("write batch failed size={} error={}", batch.size(),
                                 failure.ToString());
    for (auto& w : batch) w->done.set_value(failure);
    return;
  }
  committed_revision_ = revision_;
  if (pending_compacted_ > compacted_revision_.load()) compacted_revision_ = pending_compacted_;
  if (revision_ != start_revision) {
    // One mark per 100 ms window, holding the newest revision committed in it.
    if (!commit_marks_.empty() && commit_marks_.back().second + 100ms >= txn.now()) {
      commit_marks_.back().first = revision_;
    } else {
      commit_marks_.emplace_back(revision_, txn.now());
    }
  }
  for (const Change& c : txn.changes()) {
    if (c.type == EventType::kDeleted) {
      object_cache_.Erase(c.kind_key, c.object->metadata.namespace_, c.object->metadata.name);
    } else {
      object_cache_.Put(c.kind_key, c.object);
    }
  }
  hub_.Publish(std::move(txn.changes()));
  if (!txn.gc_checks().empty()) EnqueueGc(std::move(txn.gc_checks()));
  for (size_t i = 0; i < batch.size(); ++i) batch[i]->done.set_value(std::move(*results[i]));
}

// ---- Compaction ----

// The newest revision committed before the history window began (writer thread).
int64_t SqliteStoreImpl::CompactionTarget() {
  base::WallTime cutoff = clock_->Now() - options_.history;
  int64_t target = startup_compaction_target_;
  while (!commit_marks_.empty() && commit_marks_.front().second < cutoff) {
    target = std::max(target, commit_marks_.front().first);
    commit_marks_.pop_front();
  }
  startup_compaction_target_ = target;
  // The newest revision is never compacted, so a watch from "now" can always start.
  return std::min(target, revision_ - 1);
}

// Drops the history at or below `target` that no reader can need: events superseded by a
// later change at or below it, and deletions at or below it. The latest event of every live
// key stays (it holds the object), as does everything after `target`. Runs inside the writer's
// transaction; the new horizon is published once that commits.
Status SqliteStoreImpl::CompactLocked(int64_t target, int64_t max_span) {
  int64_t from = std::max(compacted_revision_.load(), pending_compacted_);
  int64_t to = std::min(target, from + max_span);
  if (to <= from) return Status::Ok();
  {
    ASSIGN_OR_RETURN(auto q,
                     writer_->Prepare("DELETE FROM events WHERE rv IN (SELECT prev_rv FROM events "
                                      "WHERE rv > ?1 AND rv <= ?2 AND prev_rv > 0)"));
    RETURN_IF_ERROR(q.Bind(1, from).Bind(2, to).Run());
  }
  {
    ASSIGN_OR_RETURN(
        auto q, writer_->Prepare("DELETE FROM events WHERE rv > ?1 AND rv <= ?2 AND type = ?3"));
    RETURN_IF_ERROR(q.Bind(1, from).Bind(2, to).Bind(3, int64_t{kStoredDeleted}).Run());
  }
  {
    ASSIGN_OR_RETURN(auto q,
                     writer_->Prepare("UPDATE meta SET value = ?1 WHERE key = 'compacted'"));
    RETURN_IF_ERROR(q.Bind(1, to).Run());
  }
  pending_compacted_ = to;
  return Status::Ok();
}

void SqliteStoreImpl::MaybeCompact() {
  auto mono = clock_->Monotonic();
  if (mono < next_compaction_) return;
  int64_t target = CompactionTarget();
  if (target <= compacted_revision_.load()) {
    next_compaction_ = mono + kCompactionInterval;
    return;
  }
  // One bounded step per pause of the writer, so compaction never stalls writes for long.
  pending_compacted_ = 0;
  Status s = writer_->Exec("BEGIN IMMEDIATE");
  if (s.ok()) s = CompactLocked(target, kCompactionStep);
  if (s.ok()) s = writer_->Exec("COMMIT");
  if (!s.ok()) {
    writer_->Exec("ROLLBACK").IgnoreError();
    base::Logger("store")->warn("compaction failed error={}", s.ToString());
    next_compaction_ = mono + kCompactionInterval;
    return;
  }
  compacted_revision_ = pending_compacted_;
  if (compacted_revision_.load() >= target) next_compaction_ = mono + kCompactionInterval;
}

Status SqliteStoreImpl::Compact() {
  return Submit([this](Txn&) -> Result<api::Object> {
           RETURN_IF_ERROR(CompactLocked(CompactionTarget(), INT64_MAX / 2));
           return api::Object{};
         })
      .status();
}

// ---- WAL checkpoints ----

void SqliteStoreImpl::NoteWalPages(int pages) {
  bool wake;
  {
    std::lock_guard lock(checkpoint_mu_);
    wal_pages_ = pages;
    wake = pages >= kCheckpointPages;
  }
  if (wake) checkpoint_cv_.notify_one();
}

void SqliteStoreImpl::CheckpointLoop() {
  std::unique_lock lock(checkpoint_mu_);
  while (!checkpoint_stop_) {
    checkpoint_cv_.wait_for(lock, 1s,
                            [&] { return checkpoint_stop_ || wal_pages_ >= kCheckpointPages; });
    if (checkpoint_stop_) break;
    if (wal_pages_ == 0) continue;
    wal_pages_ = 0;
    lock.unlock();
    Status s = checkpointer_->Exec("PRAGMA wal_checkpoint(PASSIVE)");
    if (!s.ok()) base::Logger("store")->warn("wal checkpoint failed error={}", s.ToString());
    lock.lock();
  }
}

// ---- Watches ----

Result<std::unique_ptr<Subscription>> SqliteStoreImpl::Subscribe(const api::KindInfo* kind,
                                                                 WatchOptions options,
                                                                 WatchSink sink) {
  std::string kind_key = kind ? kind->GroupKind() : "";
  if (kind && !kind->namespaced) options.namespace_.clear();
  WatchOptions replay_options = options;
  return hub_.Subscribe(kind_key, std::move(options), std::move(sink),
                        [&](const WatchHub::Emit& emit) -> Result<int64_t> {
                          auto reader = AcquireReader();
                          return ReplayInto(*reader, kind_key, replay_options, emit);
                        });
}

Result<int64_t> SqliteStoreImpl::ReplayInto(Connection& conn, const std::string& kind_key,
                                            const WatchOptions& options,
                                            const WatchHub::Emit& emit) {
  ReadTransaction txn(conn);
  RETURN_IF_ERROR(txn.Begin());
  ASSIGN_OR_RETURN(int64_t current, conn.QueryInt("SELECT value FROM meta WHERE key = 'revision'"));
  ASSIGN_OR_RETURN(int64_t compacted,
                   conn.QueryInt("SELECT value FROM meta WHERE key = 'compacted'"));
  if (!options.resource_version) {
    // The current objects, as ADDED, then changes after `current`.
    std::string sql =
        "SELECT o.kind, e.rv, e.doc FROM objects o JOIN events e ON e.rv = o.rv WHERE "
        "(?1 = '' OR o.kind = ?1) AND (?2 = '' OR o.namespace = ?2) AND (?3 = '' OR o.name = ?3) "
        "ORDER BY o.kind, o.namespace, o.name";
    ASSIGN_OR_RETURN(auto q, conn.Prepare(sql));
    q.Bind(1, kind_key).Bind(2, options.namespace_).Bind(3, PinnedName(options));
    while (true) {
      ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      ASSIGN_OR_RETURN(auto obj, ParseDoc(q.Text(2)));
      emit(Change{q.Int(1), EventType::kAdded, std::string(q.Text(0)), std::move(obj), nullptr,
                  /*snapshot=*/true});
    }
    return current;
  }
  int64_t from = *options.resource_version;
  if (from < compacted) {
    return rules::WatchTooOld(from, compacted);
  }
  if (from > current) {
    return rules::WatchFromTheFuture(from, current);
  }
  // A selector needs each change's previous state to turn "stopped matching" into DELETED.
  const bool need_previous = !options.label_selector.empty() || !options.field_selector.empty();
  std::string sql = need_previous
                        ? "SELECT e.rv, e.type, e.kind, e.doc, p.doc FROM events e LEFT JOIN "
                          "events p ON p.rv = e.prev_rv WHERE e.rv > ?1 AND (?2 = '' OR e.kind "
                          "= ?2) ORDER BY e.rv LIMIT ?3"
                        : "SELECT e.rv, e.type, e.kind, e.doc, NULL FROM events e WHERE e.rv > "
                          "?1 AND (?2 = '' OR e.kind = ?2) ORDER BY e.rv LIMIT ?3";
  while (true) {
    ASSIGN_OR_RETURN(auto q, conn.Prepare(sql));
    q.Bind(1, from).Bind(2, kind_key).Bind(3, int64_t{kReplayPage});
    int rows = 0;
    while (true) {
      ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      ++rows;
      from = q.Int(0);
      Change c;
      c.revision = from;
      c.type = FromStored(q.Int(1));
      c.kind_key = std::string(q.Text(2));
      ASSIGN_OR_RETURN(c.object, ParseDoc(q.Text(3)));
      if (!q.IsNull(4)) {
        ASSIGN_OR_RETURN(c.previous, ParseDoc(q.Text(4)));
      }
      emit(c);
    }
    if (rows < kReplayPage) break;
  }
  return current;
}

// ---- Garbage collection ----

Status SqliteStoreImpl::QueueOrphansAtStartup() {
  ASSIGN_OR_RETURN(
      auto q, writer_->Prepare("SELECT r.kind, r.namespace, r.name FROM owner_refs r WHERE NOT "
                               "EXISTS (SELECT 1 FROM objects o WHERE o.uid = r.owner_uid)"));
  std::vector<Txn::Key> keys;
  while (true) {
    ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    keys.push_back({std::string(q.Text(0)), std::string(q.Text(1)), std::string(q.Text(2))});
  }
  if (!keys.empty()) {
    base::Logger("store")->info("garbage collection queued at startup dependents={}", keys.size());
    EnqueueGc(std::move(keys));
  }
  return Status::Ok();
}

void SqliteStoreImpl::EnqueueGc(std::vector<Txn::Key> keys) {
  {
    std::lock_guard lock(gc_mu_);
    for (auto& k : keys) gc_queue_.push_back(std::move(k));
  }
  gc_cv_.notify_all();
}

void SqliteStoreImpl::GcLoop() {
  std::unique_lock lock(gc_mu_);
  while (true) {
    gc_cv_.wait(lock, [&] { return gc_stop_ || !gc_queue_.empty(); });
    if (gc_stop_) break;
    Txn::Key key = std::move(gc_queue_.front());
    gc_queue_.pop_front();
    gc_busy_ = true;
    lock.unlock();
    auto result = Submit([key](Txn& txn) -> Result<api::Object> {
      RETURN_IF_ERROR(CollectLocked(txn, key));
      return api::Object{};
    });
    if (!result.ok() && result.status().message() != kShuttingDown) {
      base::Logger("store")->warn("garbage collection failed object={}/{}/{} error={}",
                                  key.kind_key, key.namespace_, key.name,
                                  result.status().ToString());
    }
    lock.lock();
    gc_busy_ = false;
    gc_cv_.notify_all();
  }
}

void SqliteStoreImpl::WaitForGarbageCollection() {
  std::unique_lock lock(gc_mu_);
  gc_cv_.wait(lock, [&] { return gc_stop_ || (gc_queue_.empty() && !gc_busy_); });
}

}  // namespace sqlite
}  // namespace warren::store
