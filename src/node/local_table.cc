#include "node/local_table.h"

namespace warren::node {

bool LocalTable::Contains(std::string_view id) const {
  std::lock_guard lock(mu_);
  return map_.find(id) != map_.end();
}

void LocalTable::Put(LocalSandbox local) {
  std::lock_guard lock(mu_);
  if (auto old = map_.find(local.id); old != map_.end()) Unindex(old->second.key, local.id);
  by_key_[local.key].insert(local.id);
  std::string id = local.id;
  map_.insert_or_assign(std::move(id), std::move(local));
}

void LocalTable::Unindex(const std::string& key, const std::string& id) {
  auto ids = by_key_.find(key);
  if (ids == by_key_.end()) return;
  ids->second.erase(id);
  if (ids->second.empty()) by_key_.erase(ids);
}

bool LocalTable::Erase(std::string_view id, std::string_view uid) {
  std::lock_guard lock(mu_);
  auto it = map_.find(id);
  if (it == map_.end() || it->second.uid != uid) return false;
  Unindex(it->second.key, it->second.id);
  map_.erase(it);
  return true;
}

}  // namespace warren::node
