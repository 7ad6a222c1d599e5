#include "envd/connect_handler.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/encoding.h"
#include "base/strings.h"
#include "envd/envelope.h"
#include "envd/paths.h"
#include "envd/signature.h"

namespace warren::envd {
namespace {

using net::Request;
using net::Responder;
using net::Response;

constexpr size_t kMaxRpcBody = 16 * 1024 * 1024;
constexpr auto kDefaultKeepalive = std::chrono::seconds(90);

// The Connect protocol answers an unsupported codec with HTTP 415.
Response UnsupportedMediaType(const Request& req, std::string_view want) {
  return Response::Json(
      415, ConnectErrorJson(InvalidArgumentError(fmt::format(
               "unsupported content type '{}': this method speaks the Connect protocol as {}",
               req.headers.Get("Content-Type").value_or(""), want))));
}

// The media type of a Content-Type value, lower-cased, without parameters.
std::string MediaType(const Request& req) {
  auto ct = req.headers.Get("Content-Type").value_or("");
  return base::AsciiLower(base::TrimSpace(ct.substr(0, ct.find(';'))));
}

Result<os::UserInfo> LookupUser(const RpcAuth& auth, const Request& req) {
  auto name = UserFromBasicAuth(req.headers.Get("Authorization"), auth.state->default_user());
  if (!name.ok()) return UnauthenticatedError(name.status().message());
  auto user = auth.users->LookupUser(*name);
  if (!user.ok()) {
    if (user.status().code() == StatusCode::kNotFound) {
      return UnauthenticatedError(fmt::format("invalid username: '{}'", *name));
    }
    return user.status();
  }
  return user;
}

// Connect-Timeout-Ms: at most 10 digits (the protocol's limit); 0 means no deadline, as the
// SDKs' timeoutMs: 0 does.
Result<std::optional<std::chrono::milliseconds>> ParseTimeout(const Request& req) {
  auto v = req.headers.Get("Connect-Timeout-Ms");
  if (!v) return std::optional<std::chrono::milliseconds>();
  auto ms = base::ParseInt64(base::TrimSpace(*v));
  if (!ms || *ms < 0 || v->size() > 10) {
    return InvalidArgumentError(fmt::format("invalid Connect-Timeout-Ms '{}'", *v));
  }
  if (*ms == 0) return std::optional<std::chrono::milliseconds>();
  return std::optional<std::chrono::milliseconds>(std::chrono::milliseconds(*ms));
}

// Keepalive-Ping-Interval in seconds; envd's default without it is 90 s.
std::chrono::milliseconds ParseKeepalive(const Request& req) {
  auto v = req.headers.Get("Keepalive-Ping-Interval");
  if (!v) return kDefaultKeepalive;
  auto s = base::ParseInt64(base::TrimSpace(*v));
  if (!s || *s <= 0 || *s > 24 * 3600) return kDefaultKeepalive;
  return std::chrono::seconds(*s);
}

// A server stream's messages as Connect envelopes on a chunked HTTP response.
class HttpMessageSink final : public MessageSink {
 public:
  explicit HttpMessageSink(std::shared_ptr<net::ResponseStream> stream)
      : stream_(std::move(stream)) {}
  bool Send(std::string json) override {
    return stream_->Write(EncodeEnvelope(kEnvelopeMessage, json));
  }
  void Finish(const Status& status) override {
    stream_->Write(EncodeEnvelope(kEnvelopeEndStream, EndStreamJson(status)));
    stream_->Finish();
  }
  bool WaitWritable(size_t high_water, std::chrono::milliseconds timeout) override {
    return stream_->WaitWritable(high_water, timeout);
  }
  void OnClose(std::function<void()> callback) override { stream_->OnClose(std::move(callback)); }
  bool closed() const override { return stream_->closed(); }

 private:
  std::shared_ptr<net::ResponseStream> stream_;
};

net::RouteOptions RpcRoute() {
  net::RouteOptions o;
  o.blocking = true;  // methods fork, touch the filesystem, write to pipes
  o.max_body_bytes = kMaxRpcBody;
  return o;
}

}  // namespace

Response HttpError(int status, std::string_view message) {
  return Response::Json(status, nlohmann::json{{"code", status}, {"message", message}}.dump(
                                    -1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Response ConnectError(const Status& status) {
  return Response::Json(HttpStatusFromCode(status.code()), ConnectErrorJson(status));
}

bool IsNodeCall(const EnvdState& state, const Request& req) {
  auto secret = state.reset_secret();
  auto given = req.headers.Get("X-Warren-Node-Secret");  // kNodeSecretHeader (envd_server.h)
  return secret && given && base::ConstantTimeEquals(*given, *secret);
}

Status CheckRequestToken(const EnvdState& state, const Request& req) {
  auto header = req.headers.Get("X-Access-Token");
  return CheckAccessToken(state.access_token(),
                          header ? std::optional<std::string>(*header) : std::nullopt);
}

void AddUnaryMethod(net::Router& router, std::string_view path, RpcAuth auth, UnaryMethod method) {
  router.Add(
      "POST", path,
      [auth, method = std::move(method)](Request&& req, Responder r) {
        if (Status s = CheckRequestToken(*auth.state, req); !s.ok()) {
          return r.Send(HttpError(401, s.message()));
        }
        if (MediaType(req) != "application/json") {
          return r.Send(UnsupportedMediaType(req, "application/json"));
        }
        auto user = LookupUser(auth, req);
        if (!user.ok()) return r.Send(ConnectError(user.status()));
        auto out = method(req.body, *user);
        if (!out.ok()) return r.Send(ConnectError(out.status()));
        r.Send(Response::Json(200, std::move(*out)));
      },
      RpcRoute());
}

void AddStreamMethod(net::Router& router, std::string_view path, RpcAuth auth,
                     StreamMethod method) {
  router.Add(
      "POST", path,
      [auth, method = std::move(method)](Request&& req, Responder r) {
        const bool node_call = IsNodeCall(*auth.state, req);
        if (Status s = CheckRequestToken(*auth.state, req); !s.ok() && !node_call) {
          return r.Send(HttpError(401, s.message()));
        }
        if (MediaType(req) != "application/connect+json") {
          return r.Send(UnsupportedMediaType(req, "application/connect+json"));
        }
        net::Headers headers;
        headers.Set("Content-Type", "application/connect+json");
        auto sink = std::make_shared<HttpMessageSink>(r.Stream(200, std::move(headers)));
        auto timeout = ParseTimeout(req);
        if (!timeout.ok()) return sink->Finish(timeout.status());
        auto payload = DecodeSingleEnvelope(req.body, kMaxRpcBody);
        if (!payload.ok()) return sink->Finish(payload.status());
        auto user = LookupUser(auth, req);
        if (!user.ok()) return sink->Finish(user.status());
        StreamOptions options;
        options.keepalive = ParseKeepalive(req);
        options.timeout = *timeout;
        options.node_call = node_call;
        method(*payload, *user, sink, options);
      },
      RpcRoute());
}

}  // namespace warren::envd
