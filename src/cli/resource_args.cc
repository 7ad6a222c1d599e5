#include "cli/resource_args.h"

#include <fmt/format.h>

#include "base/strings.h"

namespace warren::cli {
namespace {

Result<const api::KindInfo*> Resolve(const api::KindRegistry& kinds, std::string_view name) {
  const api::KindInfo* k = kinds.Resolve(name);
  if (k == nullptr) {
    return InvalidArgumentError(fmt::format(
        "the server doesn't have a resource type \"{}\" (try sbx, sbs, sbc, sbt, suo, cp, no, ev)",
        name));
  }
  return k;
}

}  // namespace

Result<std::vector<ResourceRef>> ParseResourceArgs(const api::KindRegistry& kinds,
                                                   const std::vector<std::string>& args) {
  std::vector<ResourceRef> refs;
  if (args.empty()) {
    return InvalidArgumentError("you must specify the type of resource (e.g. sbs, sbx, sbc)");
  }
  if (args[0].find('/') != std::string::npos) {
    // Every argument is KIND/NAME.
    for (const auto& a : args) {
      auto slash = a.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == a.size()) {
        return InvalidArgumentError(fmt::format(
            "there is no need to specify a resource type as a separate argument when passing "
            "arguments in resource/name form (got \"{}\")",
            a));
      }
      ASSIGN_OR_RETURN(const api::KindInfo* k, Resolve(kinds, a.substr(0, slash)));
      refs.push_back({k, a.substr(slash + 1)});
    }
    return refs;
  }
  std::vector<const api::KindInfo*> ks;
  for (auto part : base::SplitNonEmpty(args[0], ',')) {
    ASSIGN_OR_RETURN(const api::KindInfo* k, Resolve(kinds, part));
    ks.push_back(k);
  }
  if (args.size() == 1) {
    for (const auto* k : ks) refs.push_back({k, ""});
    return refs;
  }
  for (size_t i = 1; i < args.size(); ++i) {
    for (const auto* k : ks) refs.push_back({k, args[i]});
  }
  return refs;
}

}  // namespace warren::cli
