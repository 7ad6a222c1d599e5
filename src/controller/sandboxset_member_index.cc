#include "controller/sandboxset_member_index.h"

#include "api/types/labels.h"

namespace warren::controller {
namespace {

std::string HashOf(const api::Object& sandbox) {
  auto it = sandbox.metadata.labels.find(api::labels::kTemplateHash);
  return it == sandbox.metadata.labels.end() ? std::string() : it->second;
}

}  // namespace

void SetMemberIndex::Upsert(const std::string& key, const ObjectPtr& sandbox) {
  std::lock_guard lock(mu_);
  EraseLocked(key);
  const std::string* uid = SetOwnerUid(*sandbox);
  if (uid == nullptr) return;
  Entry entry{*uid, HashOf(*sandbox), ClassifyMember(*sandbox)};
  Set& set = sets_[entry.set_uid];
  set.members[key] = sandbox;
  ++set.by_hash[entry.hash][static_cast<size_t>(entry.state)];
  entries_.emplace(key, std::move(entry));
}

void SetMemberIndex::Erase(const std::string& key) {
  std::lock_guard lock(mu_);
  EraseLocked(key);
}

void SetMemberIndex::EraseLocked(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  const Entry& entry = it->second;
  auto set = sets_.find(entry.set_uid);
  if (set != sets_.end()) {
    set->second.members.erase(key);
    auto counts = set->second.by_hash.find(entry.hash);
    if (counts != set->second.by_hash.end()) {
      --counts->second[static_cast<size_t>(entry.state)];
      bool empty = true;
      for (int n : counts->second) empty = empty && n == 0;
      if (empty) set->second.by_hash.erase(counts);
    }
    if (set->second.members.empty()) sets_.erase(set);
  }
  entries_.erase(it);
}

std::vector<ObjectPtr> SetMemberIndex::MembersOf(const std::string& set_uid) const {
  std::lock_guard lock(mu_);
  std::vector<ObjectPtr> out;
  auto it = sets_.find(set_uid);
  if (it == sets_.end()) return out;
  out.reserve(it->second.members.size());
  for (const auto& [key, object] : it->second.members) out.push_back(object);
  return out;
}

MemberTally SetMemberIndex::TallyOf(const std::string& set_uid, std::string_view revision) const {
  std::lock_guard lock(mu_);
  MemberTally t;
  auto it = sets_.find(set_uid);
  if (it == sets_.end()) return t;
  auto at = [](const std::array<int, kStates>& counts, MemberState state) {
    return counts[static_cast<size_t>(state)];
  };
  for (const auto& [hash, counts] : it->second.by_hash) {
    bool current = hash == revision;
    t.dead += at(counts, MemberState::kDead);
    (current ? t.new_creating : t.old_creating) += at(counts, MemberState::kCreating);
    const int hibernated = at(counts, MemberState::kHibernated);
    (current ? t.new_available : t.old_available) +=
        at(counts, MemberState::kAvailable) + hibernated;
    t.hibernated += hibernated;
  }
  return t;
}

}  // namespace warren::controller
