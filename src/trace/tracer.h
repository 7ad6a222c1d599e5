#pragma once

// The process-wide switch for tracing. Off (the default) means no sink is installed, and a
// span then costs one relaxed atomic load: no allocation, no clock read, no lock.
//
// Ownership: Install does not take the sink; whoever installs it keeps it alive until after
// Uninstall and until every thread that may end a span has stopped (`warren server` declares
// its exporter before the server, so the server's threads are joined first). Thread-safe.

#include <atomic>
#include <string>

#include "base/traceparent.h"
#include "trace/span_data.h"

namespace warren::trace {

struct TracerConfig {
  // Fraction of new traces recorded, 0..1, decided from the trace id (so every process that
  // sees the trace decides alike). A trace that arrives with a traceparent keeps its caller's
  // decision (its sampled flag), as OpenTelemetry's parent-based sampler does.
  double sampling_ratio = 1.0;
};

namespace internal {
struct Installed {
  SpanSink* sink = nullptr;
  uint64_t sample_below = 0;  // new traces whose id's first 8 bytes are below this are kept
  bool sample_all = true;
};
extern std::atomic<const Installed*> g_installed;
}  // namespace internal

// Starts sending finished spans to `sink`. Replaces any sink installed before.
void Install(SpanSink& sink, const TracerConfig& config = {});
// Stops tracing: spans started after this are inert; spans already started still end into the
// sink they started with, so keep the sink alive until those threads are done.
void Uninstall();

inline bool Enabled() { return internal::g_installed.load(std::memory_order_relaxed) != nullptr; }

// Hands the installed sink a span another process recorded (envd's, collected by the node agent;
// `span.service` names that process). Dropped when tracing is off.
void SubmitCollected(SpanData span);

// Whether a new trace with this id is recorded under the installed ratio.
bool SampleNewTrace(const internal::Installed& installed, const base::TraceId& id);

// Random ids from a per-thread generator (not the kernel's: a span id is not a secret, and a
// getrandom per span would be the largest cost of a span).
base::SpanId NewSpanId();
base::TraceId NewTraceId();

}  // namespace warren::trace
