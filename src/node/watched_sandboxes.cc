#include "node/watched_sandboxes.h"

#include <algorithm>

namespace warren::node {

void WatchedSandboxes::Saw(const std::string& key, std::shared_ptr<const api::Object> object) {
  std::lock_guard lock(mu_);
  objects_[key] = std::move(object);
}

void WatchedSandboxes::Deleted(const std::string& key) {
  std::lock_guard lock(mu_);
  objects_.erase(key);
}

void WatchedSandboxes::Listed(const std::vector<api::Object>& items) {
  std::map<std::string, std::shared_ptr<const api::Object>, std::less<>> listed;
  for (const api::Object& o : items)
    listed.emplace(o.Key(), std::make_shared<const api::Object>(o));
  std::lock_guard lock(mu_);
  objects_ = std::move(listed);
}

std::shared_ptr<const api::Object> WatchedSandboxes::Fresh(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return nullptr;
  auto acted = acted_.find(key);
  if (acted != acted_.end() && it->second->metadata.resource_version < acted->second) {
    return nullptr;
  }
  return it->second;
}

void WatchedSandboxes::Acted(const std::string& key, int64_t resource_version) {
  std::lock_guard lock(mu_);
  int64_t& at = acted_[key];
  at = std::max(at, resource_version);
}

void WatchedSandboxes::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  acted_.erase(key);
  objects_.erase(key);
}

}  // namespace warren::node
