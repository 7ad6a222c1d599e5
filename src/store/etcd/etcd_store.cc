#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "api/object_codec.h"
#include "base/log.h"
#include "net/dial.h"
#include "store/continue_token.h"
#include "store/etcd/etcd_store_impl.h"

namespace warren::store {

Result<EtcdStoreOptions> ParseEtcdUrl(std::string_view url) {
  constexpr std::string_view kScheme = "etcd://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgumentError(fmt::format("store URL \"{}\" does not start with etcd://", url));
  }
  std::string_view rest = url.substr(kScheme.size());
  EtcdStoreOptions options;
  size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    std::string prefix(rest.substr(slash));
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    if (prefix != "/") options.prefix = prefix;
    rest = rest.substr(0, slash);
  }
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    std::string_view endpoint = rest.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    auto hp = net::ParseHostPort(endpoint);
    if (endpoint.empty() || !hp.ok()) {
      return InvalidArgumentError(
          fmt::format("store URL \"{}\": \"{}\" is not host:port", url, endpoint));
    }
    options.endpoints.push_back(hp->authority());
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return options;
}

Result<std::unique_ptr<EtcdStore>> EtcdStore::Open(EtcdStoreOptions options,
                                                   const api::KindRegistry& kinds) {
  etcd::EtcdClientOptions client_options;
  client_options.call_timeout = options.request_timeout;
  ASSIGN_OR_RETURN(auto client, etcd::EtcdClient::Create(options.endpoints, client_options));
  auto store = std::make_unique<etcd::EtcdStoreImpl>(
      std::move(options), kinds, std::shared_ptr<etcd::EtcdClient>(std::move(client)));
  RETURN_IF_ERROR(store->Start());
  return std::unique_ptr<EtcdStore>(std::move(store));
}

namespace etcd {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kRangePage = 500;  // keys fetched per range while filtering a list

bool MatchesList(const api::Object& obj, const ListOptions& options) {
  return options.label_selector.Matches(obj.metadata.labels) && options.field_selector.Matches(obj);
}

const api::Json& Kvs(const api::Json& range) {
  static const api::Json kEmpty = api::Json::array();
  auto it = range.find("kvs");
  return it == range.end() ? kEmpty : *it;
}

bool IsCompacted(const Status& s) {
  return s.code() == StatusCode::kOutOfRange && s.message().find("compacted") != std::string::npos;
}

bool IsFuture(const Status& s) {
  return s.code() == StatusCode::kOutOfRange && s.message().find("future") != std::string::npos;
}

}  // namespace

EtcdStoreImpl::EtcdStoreImpl(EtcdStoreOptions options, const api::KindRegistry& kinds,
                             std::shared_ptr<EtcdClient> client)
    : options_(std::move(options)),
      kinds_(kinds),
      clock_(options_.clock ? options_.clock : &base::RealClock()),
      keys_(options_.prefix, kinds_),
      client_(std::move(client)) {}

Status EtcdStoreImpl::Start() {
  if (options_.prefix.empty() || options_.prefix[0] != '/') {
    return InvalidArgumentError(
        fmt::format("etcd prefix \"{}\" must start with /", options_.prefix));
  }
  CurrentRevision();
  RETURN_IF_ERROR(Call("/v3/maintenance/status", api::Json::object()).status());
  RETURN_IF_ERROR(QueueOrphansAtStartup());
  StartFeed(revision_.load());
  gc_thread_ = std::thread([this] { GcLoop(); });
  if (options_.history.count() > 0 && options_.compaction_interval.count() > 0) {
    compact_thread_ = std::thread([this] { CompactLoop(); });
  }
  base::Logger("store")->info("opened etcd endpoints={} prefix={} revision={}",
                              fmt::join(options_.endpoints, ","), options_.prefix,
                              revision_.load());
  return Status::Ok();
}

EtcdStoreImpl::~EtcdStoreImpl() {
  {
    std::lock_guard lock(gc_mu_);
    stop_ = true;
  }
  gc_cv_.notify_all();
  if (gc_thread_.joinable()) gc_thread_.join();
  if (compact_thread_.joinable()) compact_thread_.join();
  // Watches end with Unavailable, as SQLite's do at shutdown.
  StopFeed();
}

Result<CallResult> EtcdStoreImpl::Call(std::string_view path, const api::Json& request) {
  ASSIGN_OR_RETURN(CallResult result, client_->Call(path, request));
  auto header = result.body.find("header");
  if (header != result.body.end()) {
    int64_t rev = Int(*header, "revision");
    int64_t seen = revision_.load();
    while (rev > seen && !revision_.compare_exchange_weak(seen, rev)) {
    }
  }
  return result;
}

Result<api::Json> EtcdStoreImpl::Range(const std::string& key, const std::string& range_end,
                                       int64_t revision, int64_t limit, bool keys_only) {
  api::Json request = {{"key", B64(key)}};
  if (!range_end.empty()) request["range_end"] = B64(range_end);
  if (revision > 0) request["revision"] = std::to_string(revision);
  if (limit > 0) request["limit"] = std::to_string(limit);
  if (keys_only) request["keys_only"] = true;
  ASSIGN_OR_RETURN(CallResult result, Call("/v3/kv/range", request));
  return std::move(result.body);
}

Result<std::optional<StoredObject>> EtcdStoreImpl::Load(const api::KindInfo& kind,
                                                        std::string_view ns,
                                                        std::string_view name) {
  ASSIGN_OR_RETURN(api::Json range, Range(keys_.Object(kind, ns, name), "", 0, 0));
  const api::Json& kvs = Kvs(range);
  if (kvs.empty()) return std::optional<StoredObject>();
  ASSIGN_OR_RETURN(StoredObject stored, DecodeKv(kvs[0]));
  return std::optional<StoredObject>(std::move(stored));
}

Result<api::Object> EtcdStoreImpl::Get(const api::KindInfo& kind, std::string_view ns,
                                       std::string_view name) {
  ASSIGN_OR_RETURN(auto stored, Load(kind, kind.namespaced ? ns : "", name));
  if (!stored) return rules::NotFound(kind, name);
  return std::move(stored->object);
}

int64_t EtcdStoreImpl::CurrentRevision() {
  // Any answer carries the revision; a range of one key that never exists is the cheapest.
  auto r = Range(options_.prefix + "/_revision", "", 0, 1, /*keys_only=*/true);
  if (!r.ok()) {
    base::Logger("store")->warn("etcd revision unknown error={}", r.status().ToString());
  }
  return revision_.load();
}

Result<ObjectList> EtcdStoreImpl::List(const api::KindInfo& kind, const ListOptions& options) {
  if (options.limit < 0) return InvalidArgumentError("limit must be >= 0");
  std::optional<ContinueToken> token;
  if (!options.continue_token.empty()) {
    ASSIGN_OR_RETURN(auto t, DecodeContinueToken(options.continue_token));
    token = std::move(t);
  }
  const std::string prefix = keys_.KindPrefix(kind, options.namespace_);
  const std::string end = PrefixEnd(prefix);
  std::string from = prefix;
  if (token) {
    std::string after = keys_.Object(kind, token->namespace_, token->name);
    if (after < prefix) return InvalidArgumentError("invalid continue token: wrong kind");
    from = after + std::string(1, '\0');
  }
  ObjectList list;
  int64_t at = token ? token->revision : 0;
  while (true) {
    const int64_t want =
        options.limit > 0 ? std::min<int64_t>(kRangePage, options.limit + 1) : kRangePage;
    auto range = Range(from, end, at, want);
    if (!range.ok()) {
      if (token && IsCompacted(range.status())) {
        return rules::ContinueTooOld(at, std::max(compacted_.load(), at + 1));
      }
      if (token && IsFuture(range.status())) {
        return InvalidArgumentError("invalid continue token: revision in the future");
      }
      return range.status();
    }
    if (at == 0) at = Int((*range)["header"], "revision");
    const api::Json& kvs = Kvs(*range);
    for (const auto& kv : kvs) {
      ASSIGN_OR_RETURN(StoredObject stored, DecodeKv(kv));
      if (!MatchesList(stored.object, options)) continue;
      if (options.limit > 0 && static_cast<int64_t>(list.items.size()) == options.limit) {
        // One more match exists: the page is full and another follows.
        const api::Object& last = list.items.back();
        list.continue_token =
            EncodeContinueToken({at, last.metadata.namespace_, last.metadata.name});
        list.resource_version = at;
        return list;
      }
      list.items.push_back(std::move(stored.object));
    }
    if (!range->value("more", false) || kvs.empty()) break;
    from = FromB64(kvs.back(), "key") + std::string(1, '\0');
  }
  list.resource_version = at;
  return list;
}

// ---- Compaction ----

void EtcdStoreImpl::NoteCommit(int64_t revision) {
  base::WallTime now = clock_->Now();
  std::lock_guard lock(marks_mu_);
  // One mark per 100 ms window, holding the newest revision committed in it.
  if (!marks_.empty() && marks_.back().second + 100ms >= now) {
    marks_.back().first = std::max(marks_.back().first, revision);
  } else {
    marks_.emplace_back(revision, now);
  }
}

void EtcdStoreImpl::NoteCompacted(int64_t revision) {
  int64_t seen = compacted_.load();
  while (revision > seen && !compacted_.compare_exchange_weak(seen, revision)) {
  }
}

int64_t EtcdStoreImpl::CompactionTarget() {
  base::WallTime cutoff = clock_->Now() - options_.history;
  int64_t target = 0;
  std::lock_guard lock(marks_mu_);
  while (!marks_.empty() && marks_.front().second < cutoff) {
    target = std::max(target, marks_.front().first);
    marks_.pop_front();
  }
  // Kept as the next horizon's lower bound: the newest revision is never compacted, so a watch
  // from "now" can always start.
  if (target > 0) marks_.emplace_front(target, base::WallTime::min());
  return std::min(target, revision_.load() - 1);
}

Status EtcdStoreImpl::Compact() {
  CurrentRevision();
  int64_t target = CompactionTarget();
  if (target <= compacted_.load()) return Status::Ok();
  auto r = Call("/v3/kv/compaction", {{"revision", std::to_string(target)}});
  // Another server (or etcd's own auto-compaction) got there first: nothing lost.
  if (!r.ok() && !IsCompacted(r.status())) return r.status();
  NoteCompacted(target);
  return Status::Ok();
}

void EtcdStoreImpl::CompactLoop() {
  std::unique_lock lock(gc_mu_);
  while (!stop_) {
    gc_cv_.wait_for(lock, options_.compaction_interval, [&] { return stop_; });
    if (stop_) break;
    lock.unlock();
    Status s = Compact();
    if (!s.ok()) base::Logger("store")->warn("etcd compaction failed error={}", s.ToString());
    lock.lock();
  }
}

// ---- Garbage collection ----

Result<std::vector<std::string>> EtcdStoreImpl::DependentKeys(std::string_view owner_uid) {
  std::string prefix = keys_.OwnersOf(owner_uid);
  ASSIGN_OR_RETURN(api::Json range, Range(prefix, PrefixEnd(prefix), 0, 0, /*keys_only=*/true));
  std::vector<std::string> out;
  for (const auto& kv : Kvs(range)) {
    if (auto dep = keys_.DependentOf(FromB64(kv, "key"))) out.push_back(std::move(*dep));
  }
  return out;
}

Status EtcdStoreImpl::QueueOrphansAtStartup() {
  const std::string owners = keys_.OwnersPrefix();
  const std::string uids = keys_.UidPrefix();
  ASSIGN_OR_RETURN(api::Json live, Range(uids, PrefixEnd(uids), 0, 0, /*keys_only=*/true));
  std::set<std::string> live_uids;
  for (const auto& kv : Kvs(live)) live_uids.insert(FromB64(kv, "key").substr(uids.size()));
  ASSIGN_OR_RETURN(api::Json entries, Range(owners, PrefixEnd(owners), 0, 0, /*keys_only=*/true));
  std::vector<std::string> keys;
  for (const auto& kv : Kvs(entries)) {
    std::string key = FromB64(kv, "key");
    std::string owner = key.substr(owners.size(), key.find('/', owners.size()) - owners.size());
    if (live_uids.count(owner)) continue;
    if (auto dep = keys_.DependentOf(key)) keys.push_back(std::move(*dep));
  }
  if (!keys.empty()) {
    base::Logger("store")->info("garbage collection queued at startup dependents={}", keys.size());
    EnqueueGc(std::move(keys));
  }
  return Status::Ok();
}

void EtcdStoreImpl::EnqueueGc(std::vector<std::string> object_keys) {
  if (object_keys.empty()) return;
  {
    std::lock_guard lock(gc_mu_);
    for (auto& k : object_keys) gc_queue_.push_back(std::move(k));
  }
  gc_cv_.notify_all();
}

void EtcdStoreImpl::GcLoop() {
  std::unique_lock lock(gc_mu_);
  while (true) {
    gc_cv_.wait(lock, [&] { return stop_ || !gc_queue_.empty(); });
    if (stop_) break;
    std::string key = std::move(gc_queue_.front());
    gc_queue_.pop_front();
    gc_busy_ = true;
    lock.unlock();
    Status s = Collect(key);
    if (!s.ok()) {
      base::Logger("store")->warn("garbage collection failed object={} error={}", key,
                                  s.ToString());
    }
    lock.lock();
    gc_busy_ = false;
    gc_cv_.notify_all();
  }
}

void EtcdStoreImpl::WaitForGarbageCollection() {
  std::unique_lock lock(gc_mu_);
  gc_cv_.wait(lock, [&] { return stop_ || (gc_queue_.empty() && !gc_busy_); });
}

Status EtcdStoreImpl::Collect(const std::string& object_key) {
  auto parsed = keys_.Parse(object_key);
  if (!parsed) return Status::Ok();
  const api::KindInfo& kind = *parsed->kind;
  // A lost race means the dependent changed: decide again on what it is now.
  for (int attempt = 0; attempt < 16; ++attempt) {
    ASSIGN_OR_RETURN(auto dep, Load(kind, parsed->namespace_, parsed->name));
    if (!dep) return Status::Ok();
    std::set<std::string> live;
    for (const auto& ref : dep->object.metadata.owner_references) {
      ASSIGN_OR_RETURN(api::Json r, Range(keys_.Uid(ref.uid), "", 0, 1, /*keys_only=*/true));
      if (!Kvs(r).empty()) live.insert(ref.uid);
    }
    ASSIGN_OR_RETURN(rules::Write write, rules::Collect(kind, *dep, live, clock_->Now()));
    if (write.action == rules::Action::kNone) return Status::Ok();
    ASSIGN_OR_RETURN(Committed c, Commit(kind, &*dep, write));
    if (c.succeeded) return Status::Ok();
  }
  return AbortedError(fmt::format("{}: kept changing while being collected", object_key));
}

}  // namespace etcd
}  // namespace warren::store
