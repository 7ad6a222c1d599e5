// What a span costs: off (no sink installed: must be next to nothing, no allocation, clock or
// lock) and on (recorded into a sink that discards, so the figure is the span's own cost).
#include <benchmark/benchmark.h>

#include "trace/otlp_json.h"
#include "trace/span.h"

namespace warren::trace {
namespace {

class DiscardingSink : public SpanSink {
 public:
  void Submit(SpanData span) override { benchmark::DoNotOptimize(span); }
};

const base::TraceContext kCaller =
    *base::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");

// A request's shape: a root and three steps under it.
void RequestShape() {
  Span root("HTTP POST /sandboxes", Span::Root{kCaller, std::nullopt});
  { Span step("infra.lock"); }
  { Span step("infra.initRuntime"); }
  { Span step("proxy.syncRoute"); }
  benchmark::DoNotOptimize(root.recording());
}

void BM_RequestSpansOff(benchmark::State& state) {
  Uninstall();
  for (auto _ : state) RequestShape();
}
BENCHMARK(BM_RequestSpansOff);

void BM_RequestSpansOn(benchmark::State& state) {
  DiscardingSink sink;
  Install(sink);
  for (auto _ : state) RequestShape();
  Uninstall();
}
BENCHMARK(BM_RequestSpansOn);

void BM_ChildSpanOff(benchmark::State& state) {
  Uninstall();
  for (auto _ : state) {
    Span step("infra.lock");
    benchmark::DoNotOptimize(step.recording());
  }
}
BENCHMARK(BM_ChildSpanOff);

// The exporter thread's work per span: OTLP JSON of a full batch of request-like spans.
void BM_EncodeOtlpJsonPerSpan(benchmark::State& state) {
  std::vector<SpanData> batch(512);
  for (auto& s : batch) {
    s.name = "infra.initRuntime";
    s.context = kCaller;
    s.parent_span_id = kCaller.span_id;
    s.has_parent = true;
    s.start_unix_nanos = 1700000000000000000;
    s.end_unix_nanos = 1700000000001000000;
    s.attributes = {{"warren.sandbox", std::string("bench-pool-x7kqz")}};
  }
  for (auto _ : state) benchmark::DoNotOptimize(EncodeOtlpJson(batch, "warren"));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch.size()));
}
BENCHMARK(BM_EncodeOtlpJsonPerSpan);

}  // namespace
}  // namespace warren::trace
