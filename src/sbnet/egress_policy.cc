#include "sbnet/egress_policy.h"

#include <fmt/format.h>

namespace warren::sbnet {
namespace {

constexpr size_t kMaxEntries = 256;

Result<std::vector<os::Ipv4Prefix>> ParseList(std::string_view field,
                                              const std::vector<std::string>& entries) {
  if (entries.size() > kMaxEntries) {
    return InvalidArgumentError(
        fmt::format("network.{}: {} entries, at most {}", field, entries.size(), kMaxEntries));
  }
  std::vector<os::Ipv4Prefix> out;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& e = entries[i];
    auto p = os::ParseIpv4Prefix(e);
    if (p.ok()) {
      out.push_back(os::Ipv4Prefix{os::NetworkOf(*p), p->length});
      continue;
    }
    if (e.find(':') != std::string::npos) {
      return InvalidArgumentError(
          fmt::format("network.{}[{}]: \"{}\" is IPv6; sandboxes have IPv4 only", field, i, e));
    }
    bool name_like =
        !e.empty() && e.find_first_not_of(
                          "abcdefghijklmnopqrstuvwxyz"
                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*") == std::string::npos;
    if (name_like && e.find_first_not_of("0123456789./") != std::string::npos) {
      return InvalidArgumentError(fmt::format(
          "network.{}[{}]: \"{}\" is a domain name; this Warren filters by IPv4 address and "
          "CIDR only (domain rules are not supported yet)",
          field, i, e));
    }
    return InvalidArgumentError(fmt::format("network.{}[{}]: {}", field, i, p.status().message()));
  }
  return out;
}

Result<std::vector<std::string>> StringList(const nlohmann::json& j, std::string_view key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) return InvalidArgumentError(fmt::format("network.{}: not a list", key));
  for (const auto& v : *it) {
    if (!v.is_string()) {
      return InvalidArgumentError(fmt::format("network.{}: every entry must be a string", key));
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

Result<EgressPolicy> MakeEgressPolicy(bool allow_internet,
                                      const std::vector<std::string>& allow_out,
                                      const std::vector<std::string>& deny_out) {
  EgressPolicy p;
  p.allow_internet = allow_internet;
  ASSIGN_OR_RETURN(p.allow_out, ParseList("allowOut", allow_out));
  ASSIGN_OR_RETURN(p.deny_out, ParseList("denyOut", deny_out));
  return p;
}

nlohmann::json EgressPolicyToJson(const EgressPolicy& policy) {
  auto list = [](const std::vector<os::Ipv4Prefix>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& p : v) a.push_back(os::FormatIpv4Prefix(p));
    return a;
  };
  return {{"allowInternetAccess", policy.allow_internet},
          {"allowOut", list(policy.allow_out)},
          {"denyOut", list(policy.deny_out)}};
}

Result<EgressPolicy> EgressPolicyFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgumentError("network: not an object");
  bool allow = true;
  if (auto it = j.find("allowInternetAccess"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) return InvalidArgumentError("network.allowInternetAccess: not a bool");
    allow = it->get<bool>();
  }
  ASSIGN_OR_RETURN(auto allow_out, StringList(j, "allowOut"));
  ASSIGN_OR_RETURN(auto deny_out, StringList(j, "denyOut"));
  return MakeEgressPolicy(allow, allow_out, deny_out);
}

}  // namespace warren::sbnet
