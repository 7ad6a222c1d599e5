#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace warren::server::e2b {

// Where each sandbox id was last seen: its object's (namespace, name). A claimed pool member
// keeps its member's name, and an admin's lookup names no namespace, so without this an id is
// found only by listing (and parsing) every sandbox — on every E2B call and twice per create
// (the audit journal looks the new sandbox up too). Hints only: the caller reads the object the
// hint names and checks it still carries the id; a miss or a stale hint falls back to the list.
// Bounded (cleared when full: hints are cheap to learn again). Thread-safe.
class SandboxLocator {
 public:
  explicit SandboxLocator(size_t capacity = 100000) : capacity_(capacity) {}

  void Remember(std::string_view id, std::string namespace_, std::string name);
  std::optional<std::pair<std::string, std::string>> Hint(std::string_view id) const;
  void Forget(std::string_view id);

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::pair<std::string, std::string>> where_;  // guarded by mu_
};

}  // namespace warren::server::e2b
