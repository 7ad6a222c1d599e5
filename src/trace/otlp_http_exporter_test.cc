#include "trace/otlp_http_exporter.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "api/json.h"
#include "net/http_server.h"

namespace warren::trace {
namespace {

using namespace std::chrono_literals;

// A real OTLP/HTTP receiver on 127.0.0.1: keeps every POSTed body.
class Receiver {
 public:
  Receiver() {
    net::Router router;
    router.Add("POST", "/v1/traces", [this](net::Request&& req, net::Responder r) {
      {
        std::lock_guard lock(mu_);
        content_types_.emplace_back(req.headers.Get("Content-Type").value_or(""));
        bodies_.push_back(std::move(req.body));
      }
      r.Send(net::Response::Json(200, "{}"));
    });
    net::ServerOptions options;
    options.loop_threads = 1;
    options.blocking_threads = 1;
    server_ = std::move(*net::HttpServer::Start(options, std::move(router)));
  }
  std::string endpoint() const { return fmt::format("http://127.0.0.1:{}", server_->port()); }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  std::vector<std::string> content_types() {
    std::lock_guard lock(mu_);
    return content_types_;
  }
  size_t spans() {
    size_t n = 0;
    for (const auto& b : bodies()) {
      auto j = api::ParseJson(b);
      if (j.ok()) n += (*j)["resourceSpans"][0]["scopeSpans"][0]["spans"].size();
    }
    return n;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> bodies_, content_types_;
  std::unique_ptr<net::HttpServer> server_;
};

SpanData ASpan(int i) {
  SpanData s;
  s.name = fmt::format("span-{}", i);
  s.context.trace_id = {1};
  s.context.span_id = {static_cast<uint8_t>(i + 1)};
  return s;
}

std::string Exposition(obs::Metrics& m) { return m.Exposition(); }

TEST(OtlpHttpExporter, PostsBatchesOfJsonToV1Traces) {
  Receiver receiver;
  obs::Metrics metrics;
  OtlpExporterOptions options;
  options.endpoint = receiver.endpoint();
  options.max_batch = 4;
  options.flush_interval = 50ms;
  auto exporter = OtlpHttpExporter::Create(options, metrics);
  ASSERT_TRUE(exporter.ok()) << exporter.status().ToString();
  for (int i = 0; i < 10; ++i) (*exporter)->Submit(ASpan(i));
  (*exporter)->Shutdown();
  EXPECT_EQ(receiver.spans(), 10u);
  EXPECT_GE(receiver.bodies().size(), 3u);  // at most 4 a batch
  for (const auto& ct : receiver.content_types()) EXPECT_EQ(ct, "application/json");
  EXPECT_EQ((*exporter)->exported(), 10u);
  EXPECT_EQ((*exporter)->dropped(), 0u);
  EXPECT_NE(Exposition(metrics).find("warren_trace_spans_exported_total 10"), std::string::npos);
}

TEST(OtlpHttpExporter, AFullQueueDropsAndCounts) {
  Receiver receiver;
  obs::Metrics metrics;
  OtlpExporterOptions options;
  options.endpoint = receiver.endpoint() + "/";
  options.max_queue = 4;
  options.max_batch = 100;      // never a full batch: the thread sleeps...
  options.flush_interval = 1h;  // ...until Shutdown
  auto exporter = OtlpHttpExporter::Create(options, metrics);
  ASSERT_TRUE(exporter.ok());
  for (int i = 0; i < 10; ++i) (*exporter)->Submit(ASpan(i));
  EXPECT_EQ((*exporter)->dropped(), 6u);
  EXPECT_NE(Exposition(metrics).find("warren_trace_spans_dropped_total{reason=\"queue_full\"} 6"),
            std::string::npos)
      << Exposition(metrics);
  (*exporter)->Shutdown();  // sends the 4 it kept
  EXPECT_EQ(receiver.spans(), 4u);
  (*exporter)->Submit(ASpan(11));  // after shutdown: dropped, never blocks
  EXPECT_EQ((*exporter)->dropped(), 7u);
}

TEST(OtlpHttpExporter, AnUnreachableCollectorCostsOnlyTheBatch) {
  obs::Metrics metrics;
  OtlpExporterOptions options;
  {
    Receiver gone;  // a port that was just in use, now closed
    options.endpoint = gone.endpoint();
  }
  options.request_timeout = 1s;
  auto exporter = OtlpHttpExporter::Create(options, metrics);
  ASSERT_TRUE(exporter.ok());
  for (int i = 0; i < 3; ++i) (*exporter)->Submit(ASpan(i));
  (*exporter)->Shutdown();
  EXPECT_EQ((*exporter)->dropped(), 3u);
  EXPECT_NE(
      Exposition(metrics).find("warren_trace_spans_dropped_total{reason=\"export_failed\"} 3"),
      std::string::npos);
}

TEST(OtlpHttpExporter, RefusesWhatItCannotSpeak) {
  obs::Metrics metrics;
  for (const char* bad : {"https://collector:4318", "collector:4318", ""}) {
    OtlpExporterOptions options;
    options.endpoint = bad;
    EXPECT_FALSE(OtlpHttpExporter::Create(options, metrics).ok()) << bad;
  }
}

}  // namespace
}  // namespace warren::trace
