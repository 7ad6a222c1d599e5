// Feeds arbitrary header values to the routing-address parser: it must never crash, and what it
// accepts must be a routable id and a valid port.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "gateway/sandbox_address.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Input: "<flags byte><id>\n<port>\n<host>\n<domain>".
  if (size == 0) return 0;
  uint8_t flags = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string_view parts[4];
  for (int i = 0; i < 3; ++i) {
    size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) {
      parts[i] = rest;
      rest = {};
    } else {
      parts[i] = rest.substr(0, nl);
      rest = rest.substr(nl + 1);
    }
  }
  parts[3] = rest;
  warren::gateway::RoutingFields fields;
  if (flags & 1) fields.sandbox_id_header = parts[0];
  if (flags & 2) fields.sandbox_port_header = parts[1];
  if (flags & 4) fields.host = parts[2];
  auto address = warren::gateway::ParseSandboxAddress(fields, (flags & 8) ? parts[3] : "");
  if (address.ok()) {
    CHECK(warren::gateway::IsRoutableSandboxId(address->sandbox_id));
    CHECK(address->port != 0);
  } else {
    CHECK(!address.status().message().empty());
  }
  return 0;
}
