#include "gateway/sandbox_address.h"

#include <fmt/format.h>

#include "base/strings.h"

namespace warren::gateway {
namespace {

constexpr size_t kMaxIdLength = 128;
constexpr size_t kMaxQuoted = 64;

// A value from the request for an error message: printable ASCII only, at most kMaxQuoted
// characters (the message goes into a JSON body and maybe a log line).
std::string Quote(std::string_view value) {
  std::string out;
  for (char c : value.substr(0, kMaxQuoted)) {
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  if (value.size() > kMaxQuoted) out += "...";
  return out;
}

std::optional<uint16_t> ParsePort(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  uint32_t port = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port == 0 || port > 65535) return std::nullopt;
  return static_cast<uint16_t>(port);
}

constexpr std::string_view kHostForm = "<port>-<sandboxId>.<domain>";

Result<SandboxAddress> FromHost(std::string_view host, std::string_view domain) {
  std::string lowered = base::AsciiLower(base::TrimSpace(host));
  std::string_view h = lowered;
  // An IPv6 literal is never a sandbox address; a trailing ":port" belongs to the gateway.
  if (!h.empty() && h.front() != '[') {
    if (size_t colon = h.rfind(':'); colon != std::string_view::npos) h = h.substr(0, colon);
  }
  auto not_of_form = [&] {
    return InvalidArgumentError(fmt::format(
        "no sandbox to route to: send the E2b-Sandbox-Id header (and E2b-Sandbox-Port, default "
        "{}) or use a Host of the form {}{}; Host \"{}\" is not",
        kEnvdPort, kHostForm, domain.empty() ? "" : fmt::format(" with domain {}", domain),
        Quote(host)));
  };
  size_t dash = h.find('-');
  size_t dot = h.find('.');
  if (dash == std::string_view::npos || dot == std::string_view::npos || dash == 0 || dash > dot) {
    return not_of_form();
  }
  std::string_view port_text = h.substr(0, dash);
  std::string_view id = h.substr(dash + 1, dot - dash - 1);
  std::string_view rest = h.substr(dot + 1);
  for (char c : port_text) {
    if (c < '0' || c > '9') return not_of_form();
  }
  if (rest.empty() || (!domain.empty() && !base::EqualsIgnoreCase(rest, domain))) {
    return not_of_form();
  }
  auto port = ParsePort(port_text);
  if (!port) {
    return InvalidArgumentError(fmt::format("Host \"{}\": port {} is not a port number (1-65535)",
                                            Quote(host), Quote(port_text)));
  }
  if (!IsRoutableSandboxId(id)) {
    return InvalidArgumentError(
        fmt::format("Host \"{}\": \"{}\" is not a valid sandbox id", Quote(host), Quote(id)));
  }
  return SandboxAddress{std::string(id), *port, /*from_host=*/true};
}

}  // namespace

bool IsRoutableSandboxId(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<SandboxAddress> ParseSandboxAddress(const RoutingFields& fields, std::string_view domain) {
  if (fields.sandbox_id_header) {
    std::string_view id = base::TrimSpace(*fields.sandbox_id_header);
    if (!IsRoutableSandboxId(id)) {
      return InvalidArgumentError(
          fmt::format("E2b-Sandbox-Id header \"{}\" is not a valid sandbox id (1-{} characters of "
                      "A-Z a-z 0-9 _ -)",
                      Quote(*fields.sandbox_id_header), kMaxIdLength));
    }
    SandboxAddress address{std::string(id), kEnvdPort, /*from_host=*/false};
    if (fields.sandbox_port_header) {
      auto port = ParsePort(base::TrimSpace(*fields.sandbox_port_header));
      if (!port) {
        return InvalidArgumentError(
            fmt::format("E2b-Sandbox-Port header \"{}\" is not a port number (1-65535)",
                        Quote(*fields.sandbox_port_header)));
      }
      address.port = *port;
    }
    return address;
  }
  if (!fields.host || base::TrimSpace(*fields.host).empty()) {
    return InvalidArgumentError(fmt::format(
        "no sandbox to route to: send the E2b-Sandbox-Id header (and E2b-Sandbox-Port, default "
        "{}) or use a Host of the form {}",
        kEnvdPort, kHostForm));
  }
  return FromHost(*fields.host, domain);
}

}  // namespace warren::gateway
