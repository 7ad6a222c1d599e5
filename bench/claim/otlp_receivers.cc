#include "otlp_receivers.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/json.h"
#include "base/check.h"
#include "base/strings.h"

namespace warren::bench {
namespace {

int64_t UnixNanos(const api::Json& v) {
  if (v.is_string()) return base::ParseInt64(v.get<std::string>()).value_or(0);
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

std::string ServiceName(const api::Json& resource) {
  if (!resource.is_object() || !resource.contains("attributes")) return "";
  for (const auto& a : resource["attributes"]) {
    if (a.value("key", "") == "service.name") {
      return a["value"].value("stringValue", "");
    }
  }
  return "";
}

// A one-thread HTTP server on an ephemeral loopback port that hands every POST /v1/traces to
// `handler`.
std::unique_ptr<net::HttpServer> StartReceiver(net::Handler handler) {
  net::Router router;
  router.Add("POST", "/v1/traces", std::move(handler));
  net::ServerOptions options;
  options.loop_threads = 1;
  options.blocking_threads = 1;
  auto started = net::HttpServer::Start(options, std::move(router));
  CHECK_MSG(started.ok(), started.status().ToString());
  return std::move(*started);
}

std::string EndpointOf(const net::HttpServer& server) {
  return fmt::format("http://127.0.0.1:{}", server.port());
}

}  // namespace

SpanCounter::SpanCounter() {
  server_ = StartReceiver([this](net::Request&& req, net::Responder r) {
    size_t n = 0;
    for (auto at = req.body.find("\"spanId\""); at != std::string::npos;
         at = req.body.find("\"spanId\"", at + 1)) {
      ++n;
    }
    spans_ += n;
    r.Send(net::Response::Json(200, "{}"));
  });
}

std::string SpanCounter::endpoint() const { return EndpointOf(*server_); }

SpanRecorder::SpanRecorder() {
  server_ = StartReceiver([this](net::Request&& req, net::Responder r) {
    auto doc = api::ParseJson(req.body);
    std::lock_guard lock(mu_);
    if (!doc.ok() || !doc->contains("resourceSpans")) {
      r.Send(net::Response::Json(400, "{}"));
      return;
    }
    for (const auto& rs : (*doc)["resourceSpans"]) {
      std::string service = ServiceName(rs.value("resource", api::Json::object()));
      for (const auto& ss : rs.value("scopeSpans", api::Json::array())) {
        for (const auto& s : ss.value("spans", api::Json::array())) {
          by_trace_[s.value("traceId", "")].push_back(
              {.name = s.value("name", ""),
               .span_id = s.value("spanId", ""),
               .parent_span_id = s.value("parentSpanId", ""),
               .service = service,
               .start_unix_ns = UnixNanos(s.value("startTimeUnixNano", api::Json())),
               .end_unix_ns = UnixNanos(s.value("endTimeUnixNano", api::Json()))});
        }
      }
    }
    r.Send(net::Response::Json(200, "{}"));
  });
}

std::string SpanRecorder::endpoint() const { return EndpointOf(*server_); }

std::vector<RecordedSpan> SpanRecorder::Trace(const std::string& trace_id) const {
  std::vector<RecordedSpan> out;
  {
    std::lock_guard lock(mu_);
    auto it = by_trace_.find(trace_id);
    if (it != by_trace_.end()) out = it->second;
  }
  std::sort(out.begin(), out.end(), [](const RecordedSpan& a, const RecordedSpan& b) {
    return a.start_unix_ns < b.start_unix_ns;
  });
  return out;
}

}  // namespace warren::bench
