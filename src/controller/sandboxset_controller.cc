#include "controller/sandboxset_controller.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <unordered_set>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "api/types/sandbox_set.h"
#include "base/ids.h"
#include "base/log.h"

namespace warren::controller {

int DefaultRefillsWhileClaiming() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

namespace {

using namespace std::chrono_literals;

std::string KeyOf(std::string_view ns, std::string_view name) {
  return fmt::format("{}/{}", ns, name);
}

std::pair<std::string, std::string> SplitKey(const std::string& key) {
  auto slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

bool IsUpdated(const api::Object& sandbox, const TemplateRevision& revision) {
  auto it = sandbox.metadata.labels.find(api::labels::kTemplateHash);
  return it != sandbox.metadata.labels.end() && it->second == revision.hash;
}

std::string_view PhaseOf(const api::Object& sandbox) {
  const api::Json& st = sandbox.status();
  if (!st.is_object() || !st.contains("phase") || !st["phase"].is_string()) return {};
  return st["phase"].get_ref<const std::string&>();
}

int64_t RecycledCount(const api::Object& sandbox) {
  const api::Json& st = sandbox.status();
  if (!st.is_object() || !st.contains("recycledCount") ||
      !st["recycledCount"].is_number_integer()) {
    return 0;
  }
  return st["recycledCount"].get<int64_t>();
}

// The reference's scale-down priority among updated members: lower goes first.
int ScaleDownPriority(const api::Object& sandbox) {
  std::string_view phase = PhaseOf(sandbox);
  if (phase.empty() || phase == api::sandbox_phase::kPending) return 0;
  if (RecycledCount(sandbox) > 0) return 1;
  if (ClassifyMember(sandbox) != MemberState::kAvailable) return 2;
  return 3;
}

}  // namespace

SandboxSetController::SandboxSetController(PoolInformers& informers, obs::EventRecorder* events,
                                           SandboxSetControllerOptions options, base::Clock& clock)
    : informers_(informers),
      store_(informers.store()),
      events_(events),
      options_(options),
      clock_(clock) {
  informers_.sets().AddHandler([this](const Informer::Change& c) {
    queue_.Add(KeyOf(c.object->metadata.namespace_, c.object->metadata.name));
  });
  informers_.sandboxes().AddHandler([this](const Informer::Change& c) { OnSandbox(c); });
  informers_.templates().AddHandler([this](const Informer::Change& c) { OnTemplate(c); });
}

SandboxSetController::~SandboxSetController() { Stop(); }

void SandboxSetController::OnSandbox(const Informer::Change& c) {
  const api::Object& now = *c.object;
  std::string key = KeyOf(now.metadata.namespace_, now.metadata.name);
  if (c.type == store::EventType::kDeleted) {
    members_.Erase(key);
  } else {
    members_.Upsert(key, c.object);
  }
  std::string_view pool = PoolOf(now);
  // A member that just left its set by a claim.
  if (c.old && SetOwnerUid(*c.old) != nullptr && !SetOwnerUid(now) && !pool.empty()) {
    std::lock_guard lock(mu_);
    last_claim_[KeyOf(now.metadata.namespace_, pool)] = std::chrono::steady_clock::now();
  }
  if (!pool.empty()) queue_.Add(KeyOf(now.metadata.namespace_, pool));
  if (c.old) {
    std::string_view old_pool = PoolOf(*c.old);
    if (!old_pool.empty() && old_pool != pool) {
      queue_.Add(KeyOf(c.old->metadata.namespace_, old_pool));
    }
  }
}

void SandboxSetController::OnTemplate(const Informer::Change& c) {
  const api::Object& t = *c.object;
  const api::OwnerReference* owner = t.ControllerRef();
  if (owner != nullptr && owner->kind == "SandboxSet") {
    queue_.Add(KeyOf(t.metadata.namespace_, owner->name));
    return;
  }
  // A template referenced by sets' templateRef: those sets roll when it changes.
  for (const auto& set : informers_.sets().List()) {
    if (set->metadata.namespace_ != t.metadata.namespace_) continue;
    const api::Json& spec = set->spec();
    if (spec.is_object() && spec.contains("templateRef") && spec["templateRef"].is_object() &&
        spec["templateRef"].value("name", "") == t.metadata.name) {
      queue_.Add(KeyOf(set->metadata.namespace_, set->metadata.name));
    }
  }
}

std::vector<ObjectPtr> SandboxSetController::MembersOf(const std::string& set_uid) const {
  return members_.MembersOf(set_uid);
}

Status SandboxSetController::Start() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = false;
  }
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
  resync_ = std::thread([this] { ResyncLoop(); });
  return Status::Ok();
}

void SandboxSetController::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  queue_.ShutDown();
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (resync_.joinable()) resync_.join();
}

void SandboxSetController::Worker() {
  auto log = base::Logger("controller");
  while (auto key = queue_.Get()) {
    auto [ns, name] = SplitKey(*key);
    Status s = Reconcile(ns, name);
    if (s.ok()) {
      queue_.Forget(*key);
    } else {
      log->warn("sandboxset reconcile failed key={} error={}", *key, s.ToString());
      queue_.AddWithBackoff(*key);
    }
    queue_.Done(*key);
  }
}

void SandboxSetController::ResyncLoop() {
  std::unique_lock lock(stop_mu_);
  while (!stop_cv_.wait_for(lock, options_.resync_period, [this] { return stopping_; })) {
    for (const auto& set : informers_.sets().List()) {
      queue_.Add(KeyOf(set->metadata.namespace_, set->metadata.name));
    }
  }
}

Status SandboxSetController::Reconcile(std::string_view ns, std::string_view name) {
  ObjectPtr set = informers_.sets().Get(ns, name);
  if (!set) {
    metrics_.Remove(std::string(ns), std::string(name));
    own_writes_.Forget(KeyOf(ns, name));
    std::lock_guard lock(mu_);
    written_sets_.erase(KeyOf(ns, name));
    status_written_at_.erase(KeyOf(ns, name));
    return Status::Ok();
  }
  if (set->metadata.deletion_timestamp) return Status::Ok();
  // Members are counted from sandbox events: not before those of our own last writes arrived,
  // or this pass would create (or delete) again what the last one did.
  if (!own_writes_.Reached(KeyOf(ns, name), informers_.sandboxes())) {
    queue_.AddAfter(KeyOf(ns, name), OwnWriteFence::kRetryAfter);
    return Status::Ok();
  }
  auto spec = api::DecodeSpec<api::SandboxSetSpec>(*set);
  if (!spec.ok()) return WriteStatus(*set, nullptr, 0, "InvalidSpec", spec.status().message());
  int32_t replicas = spec->replicas.value_or(0);

  ObjectPtr referenced;
  if (spec->template_ref && !spec->template_ref->name.empty()) {
    referenced = informers_.templates().Get(ns, spec->template_ref->name);
    if (!referenced) {
      std::string msg = fmt::format("SandboxTemplate {}/{} (spec.templateRef) not found", ns,
                                    spec->template_ref->name);
      if (events_) events_->Warning(*set, "TemplateNotFound", msg).IgnoreError();
      return WriteStatus(*set, nullptr, replicas, "TemplateNotFound", msg);
    }
  }
  TemplateRevision revision = ComputeRevision(*set, referenced.get());
  int64_t template_write = 0;
  Status ensured = EnsureRevisionTemplate(*set, revision, template_write);
  if (!ensured.ok()) {
    WriteStatus(*set, nullptr, replicas, "FailedCreate", ensured.message()).IgnoreError();
    return ensured;
  }

  // The counts decide; the members are walked only when some must be chosen for deletion (a
  // claim or a refill never needs that, so it costs the same in a pool of 10 or 10,000).
  MemberTally tally = members_.TallyOf(set->metadata.uid, revision.hash);
  int creating = tally.new_creating;
  int available = tally.available();
  int diff = replicas - (creating + available);
  bool rolling = diff == 0 && tally.old_available > 0;
  std::vector<ObjectPtr> dead, old_creating, old_available, new_creating, new_available;
  if (tally.dead > 0 || tally.old_creating > 0 || diff < 0 || rolling) {
    for (auto& m : MembersOf(set->metadata.uid)) {
      bool updated = IsUpdated(*m, revision);
      switch (ClassifyMember(*m)) {
        case MemberState::kDead:
          dead.push_back(m);
          break;
        case MemberState::kCreating:
          (updated ? new_creating : old_creating).push_back(m);
          break;
        case MemberState::kAvailable:
        case MemberState::kHibernated:
          (updated ? new_available : old_available).push_back(m);
          break;
        case MemberState::kUsed:
        case MemberState::kTerminating:
          break;
      }
    }
  }

  int64_t sandbox_write = 0;  // our last create or delete of a member
  std::string failure_reason, failure_message;
  if (int n = DeleteMembers(dead, false, sandbox_write); n > 0 && events_) {
    events_->Normal(*set, "DeletedDead", fmt::format("deleted {} failed sandboxes", n))
        .IgnoreError();
  }
  // Old-revision members still starting are replaced at once (nobody can claim them yet).
  DeleteMembers(old_creating, true, sandbox_write);

  if (diff > 0) {
    int allowed = diff;
    if (spec->scale_strategy.max_unavailable) {
      auto max = spec->scale_strategy.max_unavailable->Scaled(replicas, true);
      if (max.ok()) allowed = static_cast<int>(std::max<int64_t>(0, *max - creating));
    }
    int want = std::min(diff, allowed);
    if (want > 0) {
      switch (PaceRefill(KeyOf(ns, name))) {
        case RefillPace::kAll:
          break;
        case RefillPace::kLater:
          want = 0;
          break;
        case RefillPace::kTrickle:
          want = std::min(want, std::max(0, options_.refills_while_claiming - creating));
          break;
      }
    }
    if (want > 0) {
      std::string error;
      int made = ScaleUp(*set, revision, want, sandbox_write, error);
      if (made > 0 && events_) {
        events_->Normal(*set, "SuccessfulCreate", fmt::format("created {} sandboxes", made))
            .IgnoreError();
      }
      if (!error.empty()) {
        failure_reason = "FailedCreate";
        failure_message = error;
        if (events_) events_->Warning(*set, "FailedCreate", error).IgnoreError();
      }
    }
  } else if (diff < 0) {
    // Old revision first (oldest first), then updated ones by the reference's priority.
    std::sort(old_available.begin(), old_available.end(),
              [](const ObjectPtr& a, const ObjectPtr& b) { return OlderFirst(*a, *b); });
    std::vector<ObjectPtr> updated = new_creating;
    updated.insert(updated.end(), new_available.begin(), new_available.end());
    std::sort(updated.begin(), updated.end(), [](const ObjectPtr& a, const ObjectPtr& b) {
      int pa = ScaleDownPriority(*a), pb = ScaleDownPriority(*b);
      if (pa != pb) return pa < pb;
      if (pa == 1 && RecycledCount(*a) != RecycledCount(*b)) {
        return RecycledCount(*a) > RecycledCount(*b);
      }
      return OlderFirst(*a, *b);
    });
    std::vector<ObjectPtr> victims = old_available;
    victims.insert(victims.end(), updated.begin(), updated.end());
    victims.resize(std::min<size_t>(victims.size(), -diff));
    int n = DeleteMembers(victims, true, sandbox_write);
    if (n > 0 && events_) {
      events_->Normal(*set, "SuccessfulDelete", fmt::format("scaled down by {} sandboxes", n))
          .IgnoreError();
    }
  } else if (rolling) {
    // Rolling update: replace old available members a few at a time.
    auto max = spec->update_strategy.max_unavailable.value_or(api::IntOrString::String("20%"))
                   .Scaled(replicas, false);
    int budget = std::max<int>(1, max.ok() ? static_cast<int>(*max) : 1) - creating;
    if (budget > 0) {
      std::sort(old_available.begin(), old_available.end(),
                [](const ObjectPtr& a, const ObjectPtr& b) { return OlderFirst(*a, *b); });
      old_available.resize(std::min<size_t>(old_available.size(), budget));
      DeleteMembers(old_available, true, sandbox_write);
    }
  }
  CollectRevisions(*set, revision, template_write);

  // Read our own writes before the status (and the next reconcile) counts members.
  if (template_write > 0) {
    informers_.templates().WaitForRevision(template_write, options_.write_visible_timeout);
  }
  if (sandbox_write > 0) {
    own_writes_.WaitFor(KeyOf(ns, name), sandbox_write, informers_.sandboxes(),
                        options_.write_visible_timeout);
  }
  Status written = WriteStatus(*set, &revision, replicas, failure_reason, failure_message);
  if (!failure_reason.empty()) return UnavailableError(failure_message);
  return written;
}

SandboxSetController::RefillPace SandboxSetController::PaceRefill(const std::string& key) {
  auto now = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration delay{};
  RefillPace pace = RefillPace::kLater;
  {
    std::lock_guard lock(mu_);
    auto last = last_claim_.find(key);
    if (last == last_claim_.end() || now - last->second >= options_.refill_quiet) {
      refill_deferred_since_.erase(key);
      return RefillPace::kAll;
    }
    auto since = refill_deferred_since_.try_emplace(key, now).first->second;
    const auto quiet_at = options_.refill_quiet - (now - last->second);
    if (now - since >= options_.refill_max_delay) {
      if (options_.refills_while_claiming <= 0) {
        refill_deferred_since_.erase(key);
        return RefillPace::kAll;
      }
      // A trickle until the claims pause; then the rest at once.
      pace = RefillPace::kTrickle;
      delay = quiet_at;
    } else {
      delay = std::min<std::chrono::steady_clock::duration>(
          quiet_at, options_.refill_max_delay - (now - since));
    }
  }
  queue_.AddAfter(key, std::chrono::duration_cast<std::chrono::milliseconds>(delay) +
                           std::chrono::milliseconds(1));
  return pace;
}

Status SandboxSetController::EnsureRevisionTemplate(const api::Object& set,
                                                    const TemplateRevision& revision,
                                                    int64_t& last_write) {
  ObjectPtr existing = informers_.templates().Get(set.metadata.namespace_, revision.template_name);
  if (existing) return Status::Ok();
  auto created = store_.Create(MakeRevisionTemplate(set, revision));
  if (created.ok()) {
    last_write = std::max(last_write, created->metadata.resource_version);
    return Status::Ok();
  }
  if (created.status().code() == StatusCode::kAlreadyExists) return Status::Ok();
  return created.status().WithPrefix(
      fmt::format("create SandboxTemplate {}/{}", set.metadata.namespace_, revision.template_name));
}

int SandboxSetController::ScaleUp(const api::Object& set, const TemplateRevision& revision,
                                  int count, int64_t& last_write, std::string& first_error) {
  int made = 0;
  int batch = std::max(1, options_.initial_batch_size);
  std::mutex mu;
  while (made < count) {
    int n = std::min(batch, count - made);
    std::atomic<int> next{0};
    int ok_in_batch = 0;
    std::string batch_error;
    auto work = [&] {
      for (int i = next++; i < n; i = next++) {
        api::Object member = MakeMember(set, revision);
        // Named now: a quota reservation is held by name.
        member.metadata.name = member.metadata.generate_name + base::GenerateNameSuffix();
        auto reservation = QuotaReservation::Take(options_.quota, member);
        Result<api::Object> created =
            reservation.ok() ? store_.Create(std::move(member)) : reservation.status();
        if (created.ok()) reservation->Keep();
        std::lock_guard lock(mu);
        if (created.ok()) {
          ++ok_in_batch;
          last_write = std::max(last_write, created->metadata.resource_version);
        } else if (batch_error.empty()) {
          batch_error = created.status().ToString();
        }
      }
    };
    int threads = std::min(n, std::max(1, options_.create_parallelism));
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    made += ok_in_batch;
    metrics_.Created(set.metadata.namespace_, set.metadata.name, ok_in_batch);
    if (!batch_error.empty()) {
      first_error = fmt::format("create sandbox for SandboxSet {}/{}: {}", set.metadata.namespace_,
                                set.metadata.name, batch_error);
      break;  // slow start: a failing batch ends the pass
    }
    batch *= 2;
  }
  return made;
}

int SandboxSetController::DeleteMembers(const std::vector<ObjectPtr>& victims, bool check_version,
                                        int64_t& last_write) {
  auto log = base::Logger("controller");
  int deleted = 0;
  for (const auto& v : victims) {
    store::DeleteOptions options;
    options.preconditions.uid = v->metadata.uid;
    // The version the decision was made on: if the member changed since (claimed, locked,
    // recycled), the store refuses and the member stays.
    if (check_version) options.preconditions.resource_version = v->metadata.resource_version;
    auto r = store_.Delete(api::SandboxKind(), v->metadata.namespace_, v->metadata.name, options);
    if (r.ok()) {
      ++deleted;
      // A delete's answer carries the revision of the delete (or of its deletionTimestamp).
      last_write = std::max(last_write, r->metadata.resource_version);
      continue;
    }
    if (r.status().code() == StatusCode::kAborted || r.status().code() == StatusCode::kNotFound) {
      log->info("pool member changed before its delete; kept sandbox={}/{} reason={}",
                v->metadata.namespace_, v->metadata.name, r.status().message());
      continue;
    }
    log->warn("delete pool member failed sandbox={}/{} error={}", v->metadata.namespace_,
              v->metadata.name, r.status().ToString());
  }
  return deleted;
}

void SandboxSetController::CollectRevisions(const api::Object& set, const TemplateRevision& current,
                                            int64_t& last_write) {
  std::vector<ObjectPtr> owned;
  for (const auto& t : informers_.templates().List()) {
    const api::OwnerReference* owner = t->ControllerRef();
    if (owner != nullptr && owner->uid == set.metadata.uid &&
        t->metadata.name != current.template_name && !t->metadata.deletion_timestamp) {
      owned.push_back(t);
    }
  }
  if (owned.size() + 1 <= options_.revision_history) return;
  std::sort(owned.begin(), owned.end(),
            [](const ObjectPtr& a, const ObjectPtr& b) { return OlderFirst(*a, *b); });
  owned.resize(owned.size() + 1 - options_.revision_history);  // the oldest beyond the limit
  std::unordered_set<std::string> in_use;
  for (const auto& s : informers_.sandboxes().List()) {
    if (s->metadata.namespace_ != set.metadata.namespace_) continue;
    const api::Json& spec = s->spec();
    if (spec.is_object() && spec.contains("templateRef") && spec["templateRef"].is_object()) {
      in_use.insert(spec["templateRef"].value("name", ""));
    }
  }
  for (const auto& t : owned) {
    if (in_use.contains(t->metadata.name)) {
      // Claimed sandboxes still run from it: mark it, delete it once they are gone.
      if (!t->metadata.annotations.contains(api::annotations::kCleanupCandidate)) {
        api::Object marked = *t;
        marked.metadata.annotations[api::annotations::kCleanupCandidate] = "true";
        auto r = store_.Update(std::move(marked));
        if (r.ok()) last_write = std::max(last_write, r->metadata.resource_version);
      }
      continue;
    }
    store::DeleteOptions options;
    options.preconditions.uid = t->metadata.uid;
    store_.Delete(api::SandboxTemplateKind(), t->metadata.namespace_, t->metadata.name, options)
        .status()
        .IgnoreError();
  }
}

Status SandboxSetController::WriteStatus(const api::Object& set, const TemplateRevision* revision,
                                         int32_t desired, const std::string& failure_reason,
                                         const std::string& failure_message) {
  const std::string key = KeyOf(set.metadata.namespace_, set.metadata.name);
  // Never when the pool ran dry: a count of stock that is not there would send claims after it.
  if (failure_reason.empty() && options_.claim_status_interval.count() > 0 && revision != nullptr &&
      members_.TallyOf(set.metadata.uid, revision->hash).available() > 0) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    auto claimed = last_claim_.find(key);
    auto wrote = status_written_at_.find(key);
    if (claimed != last_claim_.end() && now - claimed->second < options_.refill_quiet &&
        wrote != status_written_at_.end() && now - wrote->second < options_.claim_status_interval) {
      // Claims are arriving: their counts go out together, a little later.
      queue_.AddAfter(key, std::chrono::ceil<std::chrono::milliseconds>(
                               options_.claim_status_interval - (now - wrote->second)));
      return Status::Ok();
    }
  }
  ObjectPtr latest = informers_.sets().Get(set.metadata.namespace_, set.metadata.name);
  {
    // Our previous status write may not have reached the cache yet: writing over the cached
    // version would only conflict.
    std::lock_guard lock(mu_);
    auto written = written_sets_.find(key);
    if (written != written_sets_.end() && latest &&
        written->second->metadata.uid == latest->metadata.uid &&
        written->second->metadata.resource_version > latest->metadata.resource_version) {
      latest = written->second;
    }
  }
  for (int attempt = 0;; ++attempt) {
    if (!latest || latest->metadata.uid != set.metadata.uid) return Status::Ok();
    api::Object updated =
        WithStatus(*latest, set, revision, desired, failure_reason, failure_message);
    if (updated.body == latest->body) return Status::Ok();
    auto r = store_.UpdateStatus(std::move(updated));
    if (r.ok()) {
      std::lock_guard lock(mu_);
      written_sets_[key] = std::make_shared<const api::Object>(std::move(*r));
      status_written_at_[key] = std::chrono::steady_clock::now();
      return Status::Ok();
    }
    if (r.status().code() == StatusCode::kNotFound) return Status::Ok();
    // Someone else wrote the set (a scale, an edit): compose again on what they wrote.
    if (r.status().code() != StatusCode::kAborted || attempt == 2) return r.status();
    auto stored = store_.Get(api::SandboxSetKind(), set.metadata.namespace_, set.metadata.name);
    if (!stored.ok()) {
      return stored.status().code() == StatusCode::kNotFound ? Status::Ok() : stored.status();
    }
    latest = std::make_shared<const api::Object>(std::move(*stored));
  }
}

api::Object SandboxSetController::WithStatus(const api::Object& latest, const api::Object& set,
                                             const TemplateRevision* revision, int32_t desired,
                                             const std::string& failure_reason,
                                             const std::string& failure_message) {
  auto decoded = api::DecodeStatus<api::SandboxSetStatus>(latest);
  api::SandboxSetStatus st = decoded.ok() ? *decoded : api::SandboxSetStatus{};
  st.observed_generation = latest.metadata.generation;
  st.selector = fmt::format("{}={},{}=false", api::labels::kSandboxPool, set.metadata.name,
                            api::labels::kSandboxClaimed);
  if (revision != nullptr) {
    st.update_revision = revision->hash;
    st.current_revision = revision->template_name;
    MemberTally t = members_.TallyOf(set.metadata.uid, revision->hash);
    st.replicas = t.creating() + t.available();
    st.available_replicas = t.available();
    st.updated_replicas = t.new_creating + t.new_available;
    st.updated_available_replicas = t.new_available;
    st.hibernated_replicas = t.hibernated;
  }
  base::WallTime now = clock_.Now();
  bool full = st.available_replicas >= desired;
  api::SetCondition(
      st.conditions,
      {.type = "Ready",
       .status = full ? "True" : "False",
       .reason = full ? "PoolFilled" : "PoolFilling",
       .message = fmt::format("{} of {} sandboxes available", st.available_replicas, desired),
       .observed_generation = latest.metadata.generation},
      now);
  if (failure_reason.empty()) {
    std::erase_if(st.conditions,
                  [](const api::Condition& c) { return c.type == "ReplicaFailure"; });
  } else {
    api::SetCondition(st.conditions,
                      {.type = "ReplicaFailure",
                       .status = "True",
                       .reason = failure_reason,
                       .message = failure_message,
                       .observed_generation = latest.metadata.generation},
                      now);
  }
  metrics_.Set(set.metadata.namespace_, set.metadata.name, desired, st,
               latest.metadata.creation_timestamp.value_or(now));
  api::Object updated = latest;
  api::EncodeStatus(st, updated);
  return updated;
}

}  // namespace warren::controller
