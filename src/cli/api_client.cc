#include "cli/api_client.h"

#include <fmt/format.h>

#include "api/status_object.h"
#include "base/strings.h"

namespace warren::cli {

Status UnreachableError(const std::string& address, const Status& cause) {
  // The transport's message repeats the method and address ("GET a:p: connect a:p: Connection
  // refused"); what follows the last mention of the address is the reason.
  std::string reason = cause.message();
  size_t at = reason.rfind(address + ": ");
  if (at != std::string::npos) reason = reason.substr(at + address.size() + 2);
  return Status(cause.code(),
                fmt::format("{} {}: {} (is `warren server` running there? The address comes from "
                            "--server, $WARREN_SERVER or `server:` in ~/.warren/config)",
                            kUnreachablePrefix, address, reason));
}

bool IsUnreachable(const Status& status) {
  return status.message().starts_with(kUnreachablePrefix);
}

void ApiClient::Authorize(net::ClientRequest& req, std::string_view api_key) {
  if (!api_key.empty()) req.headers.Set("Authorization", fmt::format("Bearer {}", api_key));
}

Result<std::unique_ptr<ApiClient>> ApiClient::Connect(std::string address, std::string api_key) {
  auto http = net::HttpClient::ForAddress(address);
  if (!http.ok()) {
    return InvalidArgumentError(
        fmt::format("invalid server address \"{}\": {}", address, http.status().message()));
  }
  return std::unique_ptr<ApiClient>(
      new ApiClient(std::move(address), std::move(api_key), std::move(*http)));
}

std::string ApiClient::Path(const api::KindInfo& kind, std::string_view ns, std::string_view name,
                            std::string_view subresource) {
  std::string path = fmt::format("/apis/{}/{}", kind.group, kind.version);
  if (kind.namespaced && !ns.empty()) path += "/namespaces/" + base::PercentEncode(ns);
  path += "/" + kind.plural;
  if (!name.empty()) path += "/" + base::PercentEncode(name);
  if (!subresource.empty()) path += "/" + std::string(subresource);
  return path;
}

Result<api::Json> ApiClient::Do(std::string method, std::string target, const api::Json* body,
                                std::string content_type) {
  net::ClientRequest req;
  req.method = std::move(method);
  req.target = std::move(target);
  req.headers.Set("Accept", "application/json");
  Authorize(req, api_key_);
  if (body) {
    req.body = api::DumpJson(*body);
    req.headers.Set("Content-Type", content_type);
  }
  auto resp = http_->Do(req);
  if (!resp.ok()) {
    return UnreachableError(address_, resp.status());
  }
  if (resp->status >= 400) return api::FromHttpError(resp->status, resp->body);
  auto json = api::ParseJson(resp->body);
  if (!json.ok()) {
    return InternalError(fmt::format("the server sent invalid JSON: {}", json.status().message()));
  }
  return std::move(*json);
}

Result<api::Json> ApiClient::Get(const api::KindInfo& kind, std::string_view ns,
                                 std::string_view name) {
  return Do("GET", Path(kind, ns, name), nullptr);
}

Result<api::Json> ApiClient::List(const api::KindInfo& kind, std::string_view ns,
                                  std::string_view query) {
  std::string target = Path(kind, ns, {});
  if (!query.empty()) target += "?" + std::string(query);
  return Do("GET", target, nullptr);
}

Result<api::Json> ApiClient::Create(const api::KindInfo& kind, std::string_view ns,
                                    const api::Json& object) {
  return Do("POST", Path(kind, ns, {}), &object);
}

Result<api::Json> ApiClient::MergePatch(const api::KindInfo& kind, std::string_view ns,
                                        std::string_view name, const api::Json& patch,
                                        std::string_view subresource) {
  return Do("PATCH", Path(kind, ns, name, subresource), &patch, "application/merge-patch+json");
}

Result<api::Json> ApiClient::Delete(const api::KindInfo& kind, std::string_view ns,
                                    std::string_view name, const api::Json& options) {
  return Do("DELETE", Path(kind, ns, name), &options);
}

Result<api::Json> ApiClient::PostSubresource(const api::KindInfo& kind, std::string_view ns,
                                             std::string_view name, std::string_view subresource,
                                             const api::Json& body) {
  return Do("POST", Path(kind, ns, name, subresource), &body);
}

Result<api::Json> ApiClient::GetPath(const std::string& path) { return Do("GET", path, nullptr); }

Status ApiClient::Watch(const api::KindInfo& kind, std::string_view ns, std::string_view query,
                        const std::function<bool(const api::Json& event)>& on_event) {
  net::ClientRequest req;
  Authorize(req, api_key_);
  req.target = Path(kind, ns, {}) + "?watch=1";
  if (!query.empty()) req.target += "&" + std::string(query);
  std::string buffer;
  std::string error_body;
  int status = 0;
  Status failure;
  auto resp = http_->DoStreaming(
      req,
      [&](const net::Response& head) {
        status = head.status;
        return true;
      },
      [&](std::string_view data) {
        if (status >= 400) {
          error_body.append(data);
          return true;
        }
        buffer.append(data);
        size_t nl;
        while ((nl = buffer.find('\n')) != std::string::npos) {
          std::string line = buffer.substr(0, nl);
          buffer.erase(0, nl + 1);
          auto event = api::ParseJson(line);
          if (!event.ok()) {
            failure = InternalError("the server sent an invalid watch event");
            return false;
          }
          if ((*event)["type"] == "ERROR") {
            const api::Json& s = (*event)["object"];
            int code = s.is_object() && s["code"].is_number_integer() ? s["code"].get<int>() : 500;
            failure = api::FromHttpError(code, api::DumpJson(s));
            return false;
          }
          if (!on_event(*event)) return false;
        }
        return true;
      });
  if (!resp.ok()) {
    return UnreachableError(address_, resp.status());
  }
  if (status >= 400) return api::FromHttpError(status, error_body);
  return failure;
}

}  // namespace warren::cli
