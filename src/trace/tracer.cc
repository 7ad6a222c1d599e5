#include "trace/tracer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <vector>

#include "base/ids.h"

namespace warren::trace {
namespace internal {
std::atomic<const Installed*> g_installed{nullptr};
}  // namespace internal

namespace {

// Every configuration ever installed stays allocated until the process ends: a span that loaded
// the pointer just before an Uninstall still reads it safely. There are only ever a handful
// (one per server start; a few in tests).
std::mutex g_mu;
std::vector<std::unique_ptr<internal::Installed>>& Retained() {
  static auto* retained = new std::vector<std::unique_ptr<internal::Installed>>();
  return *retained;
}

std::mt19937_64& Generator() {
  thread_local std::mt19937_64 generator = [] {
    uint64_t seed = 0;
    base::RandomBytes(&seed, sizeof seed);
    return std::mt19937_64(seed);
  }();
  return generator;
}

uint64_t FirstEightBytes(const base::TraceId& id) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | id[i];
  return v;
}

}  // namespace

void Install(SpanSink& sink, const TracerConfig& config) {
  auto installed = std::make_unique<internal::Installed>();
  installed->sink = &sink;
  double ratio = std::clamp(config.sampling_ratio, 0.0, 1.0);
  installed->sample_all = ratio >= 1.0;
  installed->sample_below =
      ratio >= 1.0 ? UINT64_MAX : static_cast<uint64_t>(std::ldexp(ratio, 64));
  std::lock_guard lock(g_mu);
  internal::g_installed.store(installed.get(), std::memory_order_release);
  Retained().push_back(std::move(installed));
}

void Uninstall() {
  std::lock_guard lock(g_mu);
  internal::g_installed.store(nullptr, std::memory_order_release);
}

void SubmitCollected(SpanData span) {
  const internal::Installed* installed = internal::g_installed.load(std::memory_order_acquire);
  if (installed != nullptr) installed->sink->Submit(std::move(span));
}

bool SampleNewTrace(const internal::Installed& installed, const base::TraceId& id) {
  return installed.sample_all || FirstEightBytes(id) < installed.sample_below;
}

base::SpanId NewSpanId() {
  base::SpanId id{};
  do {
    uint64_t v = Generator()();
    std::memcpy(id.data(), &v, sizeof v);
  } while (id == base::SpanId{});
  return id;
}

base::TraceId NewTraceId() {
  base::TraceId id{};
  do {
    uint64_t a = Generator()(), b = Generator()();
    std::memcpy(id.data(), &a, 8);
    std::memcpy(id.data() + 8, &b, 8);
  } while (id == base::TraceId{});
  return id;
}

}  // namespace warren::trace
