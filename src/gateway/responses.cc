#include "gateway/responses.h"

#include <fmt/format.h>

#include "api/json.h"
#include "gateway/sandbox_address.h"

namespace warren::gateway {
namespace {

// A JSON string literal (quotes included) for any bytes.
std::string JsonString(std::string_view s) { return api::DumpJson(api::Json(std::string(s))); }

}  // namespace

net::Response SandboxNotFound(std::string_view sandbox_id) {
  return net::Response::Json(
      502, fmt::format(R"({{"sandboxId":{},"message":"The sandbox was not found","code":502}})",
                       JsonString(sandbox_id)));
}

net::Response PortNotOpen(std::string_view sandbox_id, uint16_t port) {
  return net::Response::Json(
      502, fmt::format(R"({{"sandboxId":{},"message":"The sandbox is running but port is not )"
                       R"(open","port":{},"code":502}})",
                       JsonString(sandbox_id), port));
}

net::Response Unauthorized() {
  return net::Response::Json(
      401, R"({"code":401,"message":"unauthorized access, please provide a valid access token or )"
           R"(method signing if supported"})");
}

net::Response UnauthorizedFor(const net::Request& request, uint16_t port) {
  if (port == kEnvdPort && request.path == "/files" && !request.headers.Get("X-Access-Token")) {
    return JsonError(401, "missing signature query parameter");
  }
  return Unauthorized();
}

net::Response JsonError(int status, std::string_view message) {
  return net::Response::Json(
      status, fmt::format(R"({{"code":{},"message":{}}})", status, JsonString(message)));
}

}  // namespace warren::gateway
