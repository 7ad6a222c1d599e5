#include "node/local_table.h"

namespace warren::node {

bool LocalTable::Contains(std::string_view id) const {
  std::lock_guard lock(mu_);
  return map_.find(id) != map_.end();
}

void LocalTable::Put(LocalSandbox local) {
  std::lock_guard lock(mu_);
  std::string id = local.id;
  map_.insert_or_assign(std::move(id), std::move(local));
}

bool LocalTable::Erase(std::string_view id, std::string_view uid) {
  std::lock_guard lock(mu_);
  auto it = map_.find(id);
  if (it == map_.end() || it->second.uid != uid) return false;
  map_.erase(it);
  return true;
}

}  // namespace warren::node
