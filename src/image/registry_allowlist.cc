#include "image/registry_allowlist.h"

#include <fmt/format.h>

#include "base/strings.h"

namespace warren::image {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// "host", "host:port", "[v6]", "[v6]:port" → host (brackets kept) and optional port.
// nullopt when malformed.
struct HostPort {
  std::string host;
  std::optional<uint16_t> port;
};
std::optional<HostPort> SplitHostPort(std::string_view text) {
  HostPort out;
  size_t colon = std::string_view::npos;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return std::nullopt;
      colon = close + 1;
    }
  } else {
    colon = text.rfind(':');
  }
  out.host = Lower(text.substr(0, colon));
  if (colon != std::string_view::npos) {
    auto port = base::ParseInt64(text.substr(colon + 1));
    if (!port || *port < 1 || *port > 65535) return std::nullopt;
    out.port = static_cast<uint16_t>(*port);
  }
  if (out.host.empty()) return std::nullopt;
  return out;
}

bool ValidHostChars(std::string_view host) {
  if (host.front() == '[') {
    for (char c : host.substr(1, host.size() - 2)) {
      bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' || c == '.';
      if (!ok) return false;
    }
    return host.size() > 2;
  }
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    if (!ok) return false;
  }
  return host.front() != '.' && host.back() != '.';
}

}  // namespace

Result<RegistryAllowlist> RegistryAllowlist::Parse(std::string_view list) {
  RegistryAllowlist out;
  for (std::string_view raw : base::Split(list, ',')) {
    std::string_view text = base::TrimSpace(raw);
    if (text.empty()) {
      if (base::TrimSpace(list).empty()) break;
      return InvalidArgumentError(fmt::format("allowed registries '{}': an entry is empty", list));
    }
    Entry e;
    std::string_view rest = text;
    if (rest.starts_with("*.")) {
      e.wildcard = true;
      rest.remove_prefix(1);  // keep the dot: ".example.com" is the suffix
    }
    auto hp = SplitHostPort(rest);
    bool ok =
        hp.has_value() && (e.wildcard ? hp->host.size() > 1 && ValidHostChars(hp->host.substr(1))
                                      : ValidHostChars(hp->host));
    if (!ok || (e.wildcard && hp->port)) {
      return InvalidArgumentError(
          fmt::format("allowed registries: '{}' is not host, host:port or *.domain", text));
    }
    e.host = hp->host;
    e.port = hp->port;
    out.entries_.push_back(std::move(e));
  }
  return out;
}

bool RegistryAllowlist::AllowsHost(std::string_view host_in, uint16_t port) const {
  std::string host = Lower(host_in);
  for (const Entry& e : entries_) {
    bool host_ok =
        e.wildcard ? host.size() > e.host.size() && host.ends_with(e.host) : host == e.host;
    if (!host_ok) continue;
    if (!e.port || *e.port == port) return true;
  }
  return false;
}

bool RegistryAllowlist::AllowsRegistry(std::string_view registry) const {
  auto hp = SplitHostPort(registry);
  // Pulls speak plain HTTP: a registry named without a port is port 80.
  return hp.has_value() && AllowsHost(hp->host, hp->port.value_or(80));
}

std::string RegistryAllowlist::ToString() const {
  if (entries_.empty()) return "none";
  std::string out;
  for (const Entry& e : entries_) {
    if (!out.empty()) out += ",";
    out += e.wildcard ? "*" + e.host : e.host;
    if (e.port) out += fmt::format(":{}", *e.port);
  }
  return out;
}

}  // namespace warren::image
