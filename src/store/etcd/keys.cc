#include "store/etcd/keys.h"

#include <fmt/format.h>

namespace warren::store::etcd {
namespace {

std::string GroupOf(const api::KindInfo& kind) { return kind.group.empty() ? "core" : kind.group; }

}  // namespace

Keys::Keys(std::string prefix, const api::KindRegistry& kinds) : prefix_(std::move(prefix)) {
  for (const api::KindInfo* k : kinds.All()) by_path_[GroupOf(*k) + "/" + k->plural] = k;
}

std::string Keys::KindPrefix(const api::KindInfo& kind, std::string_view ns) const {
  std::string key = fmt::format("{}/{}/{}/", prefix_, GroupOf(kind), kind.plural);
  if (kind.namespaced && !ns.empty()) fmt::format_to(std::back_inserter(key), "{}/", ns);
  return key;
}

std::string Keys::Object(const api::KindInfo& kind, std::string_view ns,
                         std::string_view name) const {
  return KindPrefix(kind, kind.namespaced ? ns : "") + std::string(name);
}

std::string Keys::Uid(std::string_view uid) const { return UidPrefix() + std::string(uid); }

std::string Keys::OwnersOf(std::string_view owner_uid) const {
  return fmt::format("{}{}/", OwnersPrefix(), owner_uid);
}

std::string Keys::OwnerEntry(std::string_view owner_uid, std::string_view object_key) const {
  // The object key without "<prefix>/".
  return OwnersOf(owner_uid) + std::string(object_key.substr(All().size()));
}

std::optional<ObjectKey> Keys::Parse(std::string_view key) const {
  const std::string all = All();
  if (key.substr(0, all.size()) != all) return std::nullopt;
  std::string_view rest = key.substr(all.size());
  size_t g = rest.find('/');
  if (g == std::string_view::npos) return std::nullopt;
  size_t p = rest.find('/', g + 1);
  if (p == std::string_view::npos) return std::nullopt;
  auto it = by_path_.find(rest.substr(0, p));
  if (it == by_path_.end()) return std::nullopt;
  std::string_view tail = rest.substr(p + 1);
  ObjectKey out;
  out.kind = it->second;
  if (out.kind->namespaced) {
    // Admission gives every namespaced object a namespace, so "//" is no key of ours.
    size_t n = tail.find('/');
    if (n == std::string_view::npos || n == 0) return std::nullopt;
    out.namespace_ = std::string(tail.substr(0, n));
    tail = tail.substr(n + 1);
  }
  if (tail.empty() || tail.find('/') != std::string_view::npos) return std::nullopt;
  out.name = std::string(tail);
  return out;
}

std::optional<std::string> Keys::DependentOf(std::string_view owner_entry) const {
  const std::string owners = OwnersPrefix();
  if (owner_entry.substr(0, owners.size()) != owners) return std::nullopt;
  std::string_view rest = owner_entry.substr(owners.size());
  size_t u = rest.find('/');
  if (u == std::string_view::npos) return std::nullopt;
  return All() + std::string(rest.substr(u + 1));
}

}  // namespace warren::store::etcd
