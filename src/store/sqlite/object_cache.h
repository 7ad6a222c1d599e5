#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "api/object.h"

namespace warren::store::sqlite {

// The parsed objects of recently committed revisions, shared by the writer and the readers, so
// that finding a key at a revision already seen does not read its stored JSON (overflow pages,
// a large allocation) and parse it again: on the claim path that was a quarter of the writer's
// time and most of a template lookup. A revision's content never changes, so an entry is
// either the object at the revision asked for or a miss, never stale: the caller reads the
// key's current revision from the table in its own transaction and asks for exactly that one.
// Least recently used entries go first; thread-safe.
class ObjectCache {
 public:
  explicit ObjectCache(size_t capacity) : capacity_(capacity) {}

  // The object stored for the key at `revision`, or null.
  std::shared_ptr<const api::Object> Find(std::string_view kind_key, std::string_view ns,
                                          std::string_view name, int64_t revision);
  // Remembers `object` (its metadata names the key and the revision) unless a newer revision
  // of the key is already held: readers and the writer may put the same key in either order.
  void Put(std::string_view kind_key, std::shared_ptr<const api::Object> object);
  void Erase(std::string_view kind_key, std::string_view ns, std::string_view name);

  size_t size() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const api::Object> object;
  };
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  using Lru = std::list<Entry>;

  const size_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;  // most recently used first; guarded by mu_
  // Keys view the strings held by lru_'s entries.
  std::unordered_map<std::string_view, Lru::iterator, KeyHash, std::equal_to<>>
      index_;  // guarded by mu_
};

}  // namespace warren::store::sqlite
