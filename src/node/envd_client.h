#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "net/http_client.h"

namespace warren::node {

// HTTP to one sandbox's warren-envd (port 49983 inside its network namespace), for the node
// agent, the E2B control plane (/init at create and claim) and pool recycling (/reset). Every
// request carries the sandbox's node secret (X-Warren-Node-Secret), which envd accepts in
// place of the access token on /init, /reset and /logs. Keeps a small keep-alive pool.
// Thread-safe.
class EnvdClient {
 public:
  // `dialer` opens a connection to envd (NodeAgent passes one through Runtime::Dial).
  EnvdClient(net::Dialer dialer, std::string node_secret);

  // Any request; the node secret is added. HTTP error statuses come back as responses.
  Result<net::Response> Do(net::ClientRequest request);
  // Any request with its response body handed over as it arrives (net::HttpClient::DoStreaming).
  Result<net::Response> DoStreaming(net::ClientRequest request,
                                    std::function<bool(const net::Response& head)> on_head,
                                    std::function<bool(std::string_view data)> on_data);

  // GET /health → OK on 204.
  Status Health(std::chrono::milliseconds timeout);
  // POST /init with a JSON body ({envVars, accessToken, defaultUser, defaultWorkdir}).
  Status Init(const std::string& json_body, std::chrono::milliseconds timeout);
  // POST /reset: kills every process started through the API, forgets /init settings.
  Status Reset(std::chrono::milliseconds timeout);
  // GET /logs: the last MiB of the template command's output.
  Result<std::string> Logs(std::chrono::milliseconds timeout);

  // The header that authenticates the node to envd, for callers with their own HTTP client.
  net::Headers AuthHeaders() const;

  // Drops pooled connections (after envd restarted).
  void CloseIdle();

 private:
  Status Expect(const net::ClientRequest& request, int status, std::string_view what);

  std::unique_ptr<net::HttpClient> http_;
  const std::string node_secret_;
};

}  // namespace warren::node
