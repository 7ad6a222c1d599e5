#include "sbnet/egress_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "base/strings.h"

namespace warren::sbnet {
namespace {

constexpr size_t kMaxEntries = 256;

// A domain as allowOut takes it: DNS labels of letters, digits and '-', at least two of them,
// optionally behind "*." (its subdomains). Lower-cased, a trailing dot dropped.
std::optional<std::string> ParseDomain(std::string_view e) {
  std::string d = base::AsciiLower(e);
  if (d.ends_with('.')) d.pop_back();
  std::string_view rest = d;
  if (rest.starts_with("*.")) rest.remove_prefix(2);
  if (rest.empty() || rest.size() > 253) return std::nullopt;
  size_t labels = 0;
  bool all_digits = true;
  for (std::string_view label : base::Split(rest, '.')) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return std::nullopt;
    }
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return std::nullopt;
      if (c < '0' || c > '9') all_digits = false;
    }
    ++labels;
  }
  if (labels < 2 || all_digits) return std::nullopt;
  return d;
}

struct ParsedList {
  std::vector<os::Ipv4Prefix> prefixes;
  std::vector<std::string> domains;
};

Result<ParsedList> ParseList(std::string_view field, const std::vector<std::string>& entries,
                             bool domains_allowed) {
  if (entries.size() > kMaxEntries) {
    return InvalidArgumentError(
        fmt::format("network.{}: {} entries, at most {}", field, entries.size(), kMaxEntries));
  }
  ParsedList out;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& e = entries[i];
    auto p = os::ParseIpv4Prefix(e);
    if (p.ok()) {
      out.prefixes.push_back(os::Ipv4Prefix{os::NetworkOf(*p), p->length});
      continue;
    }
    if (e.find(':') != std::string::npos) {
      return InvalidArgumentError(
          fmt::format("network.{}[{}]: \"{}\" is IPv6; sandboxes have IPv4 only", field, i, e));
    }
    if (auto domain = ParseDomain(e)) {
      if (!domains_allowed) {
        return InvalidArgumentError(fmt::format(
            "network.{}[{}]: \"{}\" is a domain name; denyOut takes IPv4 addresses and CIDRs "
            "(deny everything with 0.0.0.0/0 and allow the domain in allowOut)",
            field, i, e));
      }
      out.domains.push_back(std::move(*domain));
      continue;
    }
    return InvalidArgumentError(fmt::format(
        "network.{}[{}]: \"{}\" is neither an IPv4 address or CIDR ({}) nor a domain name", field,
        i, e, p.status().message()));
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
  ASSIGN_OR_RETURN(ParsedList allowed, ParseList("allowOut", allow_out, /*domains_allowed=*/true));
  ASSIGN_OR_RETURN(ParsedList denied, ParseList("denyOut", deny_out, /*domains_allowed=*/false));
  p.allow_out = std::move(allowed.prefixes);
  p.allow_domains = std::move(allowed.domains);
  p.deny_out = std::move(denied.prefixes);
  return p;
}

EgressPolicy MergeEgressPolicies(const EgressPolicy& a, const EgressPolicy& b) {
  EgressPolicy m = a;
  m.allow_internet = a.allow_internet && b.allow_internet;
  auto add = [](auto& to, const auto& from) {
    for (const auto& e : from) {
      if (std::find(to.begin(), to.end(), e) == to.end()) to.push_back(e);
    }
  };
  add(m.allow_out, b.allow_out);
  add(m.allow_domains, b.allow_domains);
  add(m.deny_out, b.deny_out);
  return m;
}

bool DomainMatches(std::string_view pattern, std::string_view host) {
  if (pattern.starts_with("*.")) {
    std::string_view parent = pattern.substr(1);  // ".example.com"
    return host.size() > parent.size() && host.ends_with(parent);
  }
  return host == pattern;
}

bool EgressPolicy::Allows(os::Ipv4 destination, std::string_view host) const {
  for (const auto& p : allow_out) {
    if (os::PrefixContains(p, destination)) return true;
  }
  for (const auto& d : allow_domains) {
    if (!host.empty() && DomainMatches(d, host)) return true;
  }
  if (!allow_internet) return false;
  for (const auto& p : deny_out) {
    if (os::PrefixContains(p, destination)) return false;
  }
  return true;
}

nlohmann::json EgressPolicyToJson(const EgressPolicy& policy) {
  auto list = [](const std::vector<os::Ipv4Prefix>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& p : v) a.push_back(os::FormatIpv4Prefix(p));
    return a;
  };
  nlohmann::json allow = list(policy.allow_out);
  for (const auto& d : policy.allow_domains) allow.push_back(d);
  return {{"allowInternetAccess", policy.allow_internet},
          {"allowOut", std::move(allow)},
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
