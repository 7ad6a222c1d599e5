#include "server/e2b/sandbox_locator.h"

namespace warren::server::e2b {

void SandboxLocator::Remember(std::string_view id, std::string namespace_, std::string name) {
  std::lock_guard lock(mu_);
  if (where_.size() >= capacity_ && !where_.contains(std::string(id))) where_.clear();
  where_[std::string(id)] = {std::move(namespace_), std::move(name)};
}

std::optional<std::pair<std::string, std::string>> SandboxLocator::Hint(std::string_view id) const {
  std::lock_guard lock(mu_);
  auto it = where_.find(std::string(id));
  if (it == where_.end()) return std::nullopt;
  return it->second;
}

void SandboxLocator::Forget(std::string_view id) {
  std::lock_guard lock(mu_);
  where_.erase(std::string(id));
}

}  // namespace warren::server::e2b
