#include "node/envd_client.h"

#include <fmt/format.h>

#include "trace/propagation.h"

namespace warren::node {
namespace {

constexpr char kNodeSecretHeader[] = "X-Warren-Node-Secret";  // envd/envd_server.h
constexpr size_t kMaxErrorBody = 512;

}  // namespace

EnvdClient::EnvdClient(net::Dialer dialer, std::string node_secret)
    : http_(net::HttpClient::WithDialer(std::move(dialer), "localhost:49983")),
      node_secret_(std::move(node_secret)) {}

Result<net::Response> EnvdClient::Do(net::ClientRequest request) {
  request.headers.Set(kNodeSecretHeader, node_secret_);
  return http_->Do(request);
}

Result<net::Response> EnvdClient::DoStreaming(
    net::ClientRequest request, std::function<bool(const net::Response& head)> on_head,
    std::function<bool(std::string_view data)> on_data) {
  request.headers.Set(kNodeSecretHeader, node_secret_);
  return http_->DoStreaming(request, std::move(on_head), std::move(on_data));
}

Status EnvdClient::Expect(const net::ClientRequest& request, int status, std::string_view what) {
  ASSIGN_OR_RETURN(net::Response resp, Do(request));
  if (resp.status == status) return Status::Ok();
  std::string body = resp.body.substr(0, kMaxErrorBody);
  return Status(CodeFromHttpStatus(resp.status),
                fmt::format("envd {}: HTTP {} {}", what, resp.status, body));
}

Status EnvdClient::Health(std::chrono::milliseconds timeout) {
  net::ClientRequest req;
  req.target = "/health";
  req.timeout = timeout;
  return Expect(req, 204, "GET /health");
}

Status EnvdClient::Init(const std::string& json_body, std::chrono::milliseconds timeout) {
  net::ClientRequest req;
  req.method = "POST";
  req.target = "/init";
  req.body = json_body;
  req.headers.Set("Content-Type", "application/json");
  trace::InjectTraceparent(req.headers);
  req.timeout = timeout;
  return Expect(req, 204, "POST /init");
}

Status EnvdClient::Reset(std::chrono::milliseconds timeout) {
  net::ClientRequest req;
  req.method = "POST";
  req.target = "/reset";
  req.timeout = timeout;
  return Expect(req, 204, "POST /reset");
}

Result<std::string> EnvdClient::Logs(std::chrono::milliseconds timeout) {
  net::ClientRequest req;
  req.target = "/logs";
  req.timeout = timeout;
  ASSIGN_OR_RETURN(net::Response resp, Do(req));
  if (resp.status != 200) {
    return Status(
        CodeFromHttpStatus(resp.status),
        fmt::format("envd GET /logs: HTTP {} {}", resp.status, resp.body.substr(0, kMaxErrorBody)));
  }
  return std::move(resp.body);
}

net::Headers EnvdClient::AuthHeaders() const {
  net::Headers h;
  h.Set(kNodeSecretHeader, node_secret_);
  return h;
}

void EnvdClient::CloseIdle() { http_->CloseIdle(); }

}  // namespace warren::node
