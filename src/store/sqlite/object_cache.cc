#include "store/sqlite/object_cache.h"

namespace warren::store::sqlite {
namespace {

// Kinds, namespaces and names hold no NUL, so the joined key is unambiguous.
std::string JoinKey(std::string_view kind_key, std::string_view ns, std::string_view name) {
  std::string key;
  key.reserve(kind_key.size() + ns.size() + name.size() + 2);
  key.append(kind_key).push_back('\0');
  key.append(ns).push_back('\0');
  key.append(name);
  return key;
}

}  // namespace

std::shared_ptr<const api::Object> ObjectCache::Find(std::string_view kind_key, std::string_view ns,
                                                     std::string_view name, int64_t revision) {
  const std::string key = JoinKey(kind_key, ns, name);
  std::lock_guard lock(mu_);
  auto it = index_.find(std::string_view(key));
  if (it == index_.end() || it->second->object->metadata.resource_version != revision) {
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->object;
}

void ObjectCache::Put(std::string_view kind_key, std::shared_ptr<const api::Object> object) {
  if (capacity_ == 0) return;
  std::string key = JoinKey(kind_key, object->metadata.namespace_, object->metadata.name);
  std::lock_guard lock(mu_);
  if (auto it = index_.find(std::string_view(key)); it != index_.end()) {
    if (it->second->object->metadata.resource_version <= object->metadata.resource_version) {
      it->second->object = std::move(object);
    }
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.push_front(Entry{std::move(key), std::move(object)});
  index_.emplace(std::string_view(lru_.front().key), lru_.begin());
  if (lru_.size() > capacity_) {
    index_.erase(std::string_view(lru_.back().key));
    lru_.pop_back();
  }
}

void ObjectCache::Erase(std::string_view kind_key, std::string_view ns, std::string_view name) {
  const std::string key = JoinKey(kind_key, ns, name);
  std::lock_guard lock(mu_);
  auto it = index_.find(std::string_view(key));
  if (it == index_.end()) return;
  Lru::iterator entry = it->second;
  index_.erase(it);
  lru_.erase(entry);
}

size_t ObjectCache::size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

}  // namespace warren::store::sqlite
