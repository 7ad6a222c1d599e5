#include "server/e2b/envd_init.h"

#include <fmt/format.h>

#include <thread>

#include "api/json.h"
#include "net/http_client.h"
#include "trace/propagation.h"

namespace warren::server::e2b {
namespace {

constexpr uint16_t kEnvdPort = 49983;

}  // namespace

std::string MakeInitBody(const std::map<std::string, std::string>& env_vars,
                         std::string_view access_token, std::string_view default_user) {
  api::Json env = api::Json::object();
  for (const auto& [k, v] : env_vars) env[k] = v;
  api::Json body = {{"envVars", std::move(env)},
                    {"accessToken", std::string(access_token)},
                    {"defaultUser", std::string(default_user)}};
  return api::DumpJson(body);
}

Status SendInit(NodeAccess& node, std::string_view sandbox_id, std::string_view body,
                std::string_view access_token, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string id(sandbox_id);
  auto client = net::HttpClient::WithDialer(
      [&node, id](std::chrono::milliseconds t) { return node.Dial(id, kEnvdPort, t); },
      fmt::format("127.0.0.1:{}", kEnvdPort));
  Status last;
  for (int attempt = 0;; ++attempt) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    net::ClientRequest req;
    req.method = "POST";
    req.target = "/init";
    req.headers.Set("Content-Type", "application/json");
    if (!access_token.empty()) req.headers.Set("X-Access-Token", access_token);
    trace::InjectTraceparent(req.headers);  // envd is the callee of the caller's init span
    req.body = std::string(body);
    req.timeout = left;
    auto resp = client->Do(req);
    if (resp.ok()) {
      if (resp->status / 100 == 2) return Status::Ok();
      return InternalError(fmt::format("envd in sandbox {} refused /init: HTTP {}: {}", sandbox_id,
                                       resp->status, resp->body.substr(0, 512)));
    }
    last = resp.status();
    // A sandbox that is not there (or not running) will not become so by retrying.
    if (last.code() == StatusCode::kNotFound) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(20 * (attempt + 1), 200)));
  }
  return Status(last.ok() ? StatusCode::kDeadlineExceeded : last.code(),
                fmt::format("envd /init in sandbox {}: {}", sandbox_id,
                            last.ok() ? "timed out" : last.message()));
}

}  // namespace warren::server::e2b
