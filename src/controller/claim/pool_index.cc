#include "controller/claim/pool_index.h"

#include <fmt/format.h>

#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/node.h"
#include "base/ids.h"
#include "controller/sandboxset_member.h"

namespace warren::controller::claim {
namespace {

std::string ObjectKey(const api::Object& o) {
  return fmt::format("{}/{}", o.metadata.namespace_, o.metadata.name);
}

std::string RevisionOf(const api::Object& o) {
  auto it = o.metadata.labels.find(api::labels::kTemplateHash);
  return it == o.metadata.labels.end() ? std::string() : it->second;
}

uint64_t Seed() {
  uint64_t s;
  base::RandomBytes(&s, sizeof(s));
  return s;
}

std::string NodeOf(const api::Object& o) {
  const api::Json& status = o.status();
  if (!status.is_object()) return {};
  auto it = status.find("nodeName");
  return it != status.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

PoolIndex::PoolIndex(Informer& sandboxes, Informer* nodes) : rng_(Seed()) {
  sandboxes.AddHandler([this](const Informer::Change& c) { OnChange(c); });
  if (nodes != nullptr) nodes->AddHandler([this](const Informer::Change& c) { OnNode(c); });
}

void PoolIndex::OnNode(const Informer::Change& c) {
  const std::string& node = c.object->metadata.name;
  bool ready = true;  // a deleted Node says nothing any more
  if (c.type != store::EventType::kDeleted) {
    auto status = api::DecodeStatus<api::NodeStatus>(*c.object);
    ready = status.ok() && api::IsConditionTrue(status->conditions, "Ready");
  }
  bool notify = false;
  {
    std::lock_guard lock(mu_);
    if (!ready) {
      if (!unready_nodes_.insert(node).second) return;
      // Set aside what it holds: placement_ does not say where members run, so walk them.
      std::vector<std::pair<std::string, ObjectPtr>> moving;
      for (const Pools* tier : {&pools_, &hibernated_}) {
        for (const auto& [pool_key, pool] : *tier) {
          for (const auto& [revision, bucket] : pool.by_revision) {
            for (const ObjectPtr& m : bucket.items) {
              if (NodeOf(*m) == node) moving.emplace_back(ObjectKey(*m), m);
            }
          }
        }
      }
      for (auto& [key, m] : moving) {
        EraseLocked(key);
        InsertLocked(key, m);
      }
      return;
    }
    if (unready_nodes_.erase(node) == 0) return;
    auto aside = set_aside_.find(node);
    if (aside == set_aside_.end()) return;
    auto members = std::move(aside->second);
    set_aside_.erase(aside);
    for (auto& [key, m] : members) {
      set_aside_node_.erase(key);
      InsertClaimableLocked(key, m);
      notify = true;
    }
  }
  if (notify) stock_cv_.notify_all();
}

void PoolIndex::OnChange(const Informer::Change& c) {
  const api::Object& o = *c.object;
  std::string key = ObjectKey(o);
  bool notify = false;
  {
    std::lock_guard lock(mu_);
    EraseLocked(key);
    if (c.type == store::EventType::kDeleted) {
      taken_.erase(key);
    } else {
      auto taken = taken_.find(key);
      if (taken != taken_.end()) {
        // Taken by a claim in flight: only a newer version settles it.
        if (o.metadata.resource_version <= taken->second) return;
        taken_.erase(taken);
      }
      if (SetOwnerUid(o) != nullptr && IsStock(ClassifyMember(o))) {
        InsertLocked(key, c.object);
        notify = true;
      }
    }
  }
  if (notify) stock_cv_.notify_all();
}

void PoolIndex::InsertLocked(const std::string& key, const ObjectPtr& object) {
  std::string node = NodeOf(*object);
  if (!node.empty() && unready_nodes_.contains(node)) {
    set_aside_[node][key] = object;
    set_aside_node_[key] = std::move(node);
    return;
  }
  InsertClaimableLocked(key, object);
}

void PoolIndex::InsertClaimableLocked(const std::string& key, const ObjectPtr& object) {
  std::string pool_key = fmt::format("{}/{}", object->metadata.namespace_, PoolOf(*object));
  std::string revision = RevisionOf(*object);
  const bool hibernated = ClassifyMember(*object) == MemberState::kHibernated;
  Pool& pool = (hibernated ? hibernated_ : pools_)[pool_key];
  Bucket& bucket = pool.by_revision[revision];
  bucket.position[key] = bucket.items.size();
  bucket.items.push_back(object);
  ++pool.size;
  placement_[key] = Placement{std::move(pool_key), std::move(revision), hibernated};
}

void PoolIndex::EraseLocked(const std::string& key) {
  if (auto aside = set_aside_node_.find(key); aside != set_aside_node_.end()) {
    auto node = set_aside_.find(aside->second);
    if (node != set_aside_.end()) {
      node->second.erase(key);
      if (node->second.empty()) set_aside_.erase(node);
    }
    set_aside_node_.erase(aside);
    return;
  }
  auto where = placement_.find(key);
  if (where == placement_.end()) return;
  Pools& tier = where->second.hibernated ? hibernated_ : pools_;
  auto pool_it = tier.find(where->second.pool_key);
  if (pool_it != tier.end()) {
    Pool& pool = pool_it->second;
    auto bucket_it = pool.by_revision.find(where->second.revision);
    if (bucket_it != pool.by_revision.end()) {
      Bucket& bucket = bucket_it->second;
      auto pos = bucket.position.find(key);
      if (pos != bucket.position.end()) {
        size_t i = pos->second;
        bucket.position.erase(pos);
        if (i + 1 != bucket.items.size()) {
          bucket.items[i] = std::move(bucket.items.back());
          bucket.position[ObjectKey(*bucket.items[i])] = i;
        }
        bucket.items.pop_back();
        --pool.size;
      }
      if (bucket.items.empty()) pool.by_revision.erase(bucket_it);
    }
    if (pool.size == 0) tier.erase(pool_it);
  }
  placement_.erase(where);
}

ObjectPtr PoolIndex::Take(std::string_view ns, std::string_view pool_name,
                          std::string_view revision, bool wake) {
  std::string pool_key = fmt::format("{}/{}", ns, pool_name);
  std::lock_guard lock(mu_);
  if (ObjectPtr running = TakeLocked(pools_, pool_key, revision)) return running;
  return wake ? TakeLocked(hibernated_, pool_key, revision) : nullptr;
}

ObjectPtr PoolIndex::TakeLocked(Pools& tier, const std::string& pool_key,
                                std::string_view revision) {
  auto pool_it = tier.find(pool_key);
  if (pool_it == tier.end()) return nullptr;
  Pool& pool = pool_it->second;
  Bucket* bucket = nullptr;
  auto preferred = pool.by_revision.find(std::string(revision));
  if (preferred != pool.by_revision.end()) {
    bucket = &preferred->second;
  } else if (!pool.by_revision.empty()) {
    bucket = &pool.by_revision.begin()->second;
  }
  if (bucket == nullptr || bucket->items.empty()) return nullptr;
  ObjectPtr picked =
      bucket->items[std::uniform_int_distribution<size_t>(0, bucket->items.size() - 1)(rng_)];
  std::string key = ObjectKey(*picked);
  EraseLocked(key);
  taken_[key] = picked->metadata.resource_version;
  return picked;
}

void PoolIndex::Return(const ObjectPtr& member) {
  std::string key = ObjectKey(*member);
  {
    std::lock_guard lock(mu_);
    auto taken = taken_.find(key);
    if (taken == taken_.end() || taken->second != member->metadata.resource_version) return;
    taken_.erase(taken);
    if (placement_.contains(key) || set_aside_node_.contains(key)) return;
    InsertLocked(key, member);
  }
  stock_cv_.notify_all();
}

bool PoolIndex::WaitForStock(std::string_view ns, std::string_view pool_name,
                             std::chrono::steady_clock::time_point deadline, bool wake) {
  std::string pool_key = fmt::format("{}/{}", ns, pool_name);
  std::unique_lock lock(mu_);
  auto stocked = [&] {
    return pools_.contains(pool_key) || (wake && hibernated_.contains(pool_key));
  };
  stock_cv_.wait_until(lock, deadline, [&] { return shut_down_ || stocked(); });
  return !shut_down_ && stocked();
}

void PoolIndex::Shutdown() {
  {
    std::lock_guard lock(mu_);
    shut_down_ = true;
  }
  stock_cv_.notify_all();
}

size_t PoolIndex::Available(std::string_view ns, std::string_view pool_name) const {
  std::lock_guard lock(mu_);
  auto it = pools_.find(fmt::format("{}/{}", ns, pool_name));
  return it == pools_.end() ? 0 : it->second.size;
}

size_t PoolIndex::Hibernated(std::string_view ns, std::string_view pool_name) const {
  std::lock_guard lock(mu_);
  auto it = hibernated_.find(fmt::format("{}/{}", ns, pool_name));
  return it == hibernated_.end() ? 0 : it->second.size;
}

}  // namespace warren::controller::claim
