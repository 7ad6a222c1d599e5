#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "api/json.h"
#include "api/kinds.h"
#include "base/result.h"
#include "net/http_client.h"

namespace warren::cli {

inline constexpr std::string_view kUnreachablePrefix = "cannot reach the warren server at";

// "cannot reach the warren server at ADDRESS: REASON (hint)", keeping the cause's code.
Status UnreachableError(const std::string& address, const Status& cause);
// Whether a failure is UnreachableError's (nothing further will work: stop, report it once).
bool IsUnreachable(const Status& status);

// The resource REST API as the CLI uses it. Errors come back as the server's Status (code and
// message, e.g. NotFound "sandboxsets.agents.kruise.io \"x\" not found"); an unreachable server
// is Unavailable with the address in the message. Thread-compatible.
class ApiClient {
 public:
  // `address`: "127.0.0.1:7780" or "http://host:port". `api_key` is sent with every request
  // as `Authorization: Bearer <key>` (none when empty; the server then answers 401).
  static Result<std::unique_ptr<ApiClient>> Connect(std::string address, std::string api_key);

  // Sets the key's Authorization header on a request made outside this client (logs).
  static void Authorize(net::ClientRequest& req, std::string_view api_key);

  const std::string& address() const { return address_; }

  // "/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]".
  static std::string Path(const api::KindInfo& kind, std::string_view ns, std::string_view name,
                          std::string_view subresource = {});

  Result<api::Json> Get(const api::KindInfo& kind, std::string_view ns, std::string_view name);
  // `query`: already-encoded "labelSelector=...&limit=..." (may be empty).
  Result<api::Json> List(const api::KindInfo& kind, std::string_view ns, std::string_view query);
  Result<api::Json> Create(const api::KindInfo& kind, std::string_view ns, const api::Json& object);
  Result<api::Json> MergePatch(const api::KindInfo& kind, std::string_view ns,
                               std::string_view name, const api::Json& patch,
                               std::string_view subresource = {});
  Result<api::Json> Delete(const api::KindInfo& kind, std::string_view ns, std::string_view name,
                           const api::Json& options);
  // POST of a subresource (Path(kind, ns, name, subresource)), e.g. a Sandbox's eviction.
  Result<api::Json> PostSubresource(const api::KindInfo& kind, std::string_view ns,
                                    std::string_view name, std::string_view subresource,
                                    const api::Json& body);
  // Streams watch events ({"type", "object"}) to `on_event` until it returns false or the
  // stream ends.
  Status Watch(const api::KindInfo& kind, std::string_view ns, std::string_view query,
               const std::function<bool(const api::Json& event)>& on_event);
  // GET of any path returning JSON (/version).
  Result<api::Json> GetPath(const std::string& path);

 private:
  ApiClient(std::string address, std::string api_key, std::unique_ptr<net::HttpClient> http)
      : address_(std::move(address)), api_key_(std::move(api_key)), http_(std::move(http)) {}
  Result<api::Json> Do(std::string method, std::string target, const api::Json* body,
                       std::string content_type = "application/json");

  std::string address_;
  std::string api_key_;
  std::unique_ptr<net::HttpClient> http_;
};

}  // namespace warren::cli
