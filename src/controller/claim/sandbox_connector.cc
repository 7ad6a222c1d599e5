#include "controller/claim/sandbox_connector.h"

#include <fmt/format.h>

#include "net/http_client.h"
#include "trace/propagation.h"

namespace warren::controller::claim {
namespace {

Status Post(SandboxConnector& connector, std::string_view sandbox_id, std::string_view path,
            std::string body, std::chrono::milliseconds timeout, std::string_view token) {
  std::string id(sandbox_id);
  auto client = net::HttpClient::WithDialer(
      [&connector, id](std::chrono::milliseconds t) { return connector.Dial(id, kEnvdPort, t); },
      fmt::format("127.0.0.1:{}", kEnvdPort));
  net::ClientRequest request;
  request.method = "POST";
  request.target = std::string(path);
  request.headers = connector.EnvdAuthHeaders(sandbox_id);
  request.headers.Set("Content-Type", "application/json");
  if (!token.empty()) request.headers.Set("X-Access-Token", token);
  trace::InjectTraceparent(request.headers);
  request.body = std::move(body);
  request.timeout = timeout;
  request.max_response_bytes = 64 * 1024;
  auto response = client->Do(request);
  if (!response.ok()) {
    return Status(response.status().code(), fmt::format("envd {} of sandbox {}: {}", path,
                                                        sandbox_id, response.status().message()));
  }
  if (response->status != 204 && response->status != 200) {
    return UnavailableError(fmt::format("envd {} of sandbox {} answered {}: {}", path, sandbox_id,
                                        response->status, response->body.substr(0, 512)));
  }
  return Status::Ok();
}

}  // namespace

Status SandboxConnector::Init(std::string_view sandbox_id, const std::string& body,
                              std::chrono::milliseconds timeout, std::string_view current_token) {
  return Post(*this, sandbox_id, "/init", body, timeout, current_token);
}

Status SandboxConnector::Reset(std::string_view sandbox_id, std::chrono::milliseconds timeout) {
  return Post(*this, sandbox_id, "/reset", "{}", timeout, {});
}

Result<bool> SandboxConnector::HoldsToken(std::string_view sandbox_id, std::string_view token,
                                          std::chrono::milliseconds timeout) {
  std::string id(sandbox_id);
  auto client = net::HttpClient::WithDialer(
      [this, id](std::chrono::milliseconds t) { return Dial(id, kEnvdPort, t); },
      fmt::format("127.0.0.1:{}", kEnvdPort));
  auto accepts = [&](std::string_view t) -> Result<bool> {
    net::ClientRequest request;
    request.target = "/envs";
    request.headers.Set("X-Access-Token", t);
    request.timeout = timeout;
    request.max_response_bytes = 1 << 20;
    ASSIGN_OR_RETURN(auto response, client->Do(request));
    if (response.status == 200) return true;
    if (response.status == 401) return false;
    return UnavailableError(
        fmt::format("envd GET /envs of sandbox {} answered {}", sandbox_id, response.status));
  };
  ASSIGN_OR_RETURN(bool with_token, accepts(token));
  if (!with_token) return false;
  // Accepting anything means envd holds no token at all.
  ASSIGN_OR_RETURN(bool with_other, accepts(std::string(token) + "-not-it"));
  return !with_other;
}

Status EnvdInit(SandboxConnector& connector, std::string_view sandbox_id, const std::string& body,
                std::chrono::milliseconds timeout, std::string_view current_token) {
  return connector.Init(sandbox_id, body, timeout, current_token);
}

Status EnvdReset(SandboxConnector& connector, std::string_view sandbox_id,
                 std::chrono::milliseconds timeout) {
  return connector.Reset(sandbox_id, timeout);
}

}  // namespace warren::controller::claim
