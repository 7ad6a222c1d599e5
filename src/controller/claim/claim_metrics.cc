#include "controller/claim/claim_metrics.h"

#include "obs/sandbox_metric_help.h"

namespace warren::controller::claim {
namespace {

constexpr const char* kLockTypeNames[] = {lock_type::kUpdate, lock_type::kCreate, "none"};

int LockTypeIndex(std::string_view lock) {
  for (int i = 0; i < 2; ++i) {
    if (lock == kLockTypeNames[i]) return i;
  }
  return 2;
}

constexpr const char* kTotalHelp = "Sandbox claims by result and lock type.";
constexpr const char* kRetriesHelp = "Compare-and-swap conflicts a claim lost before it won.";

}  // namespace

ClaimMetrics::ClaimMetrics(obs::Metrics& m)
    : families_{{m.Counter("sandbox_claim_total", kTotalHelp, {{"source", "e2b"}}),
                 &m.Histogram("sandbox_claim_duration_seconds", obs::help::kClaimDuration,
                              {{"source", "e2b"}}),
                 m.Histogram("sandbox_claim_retries", kRetriesHelp, {{"source", "e2b"}})},
                {m.Counter("sandbox_claim_total", kTotalHelp, {{"source", "k8s"}}), nullptr,
                 m.Histogram("sandbox_claim_retries", kRetriesHelp, {{"source", "k8s"}})}},
      fast_duration_(m.Histogram("warren_claim_duration_seconds",
                                 "Time to claim a sandbox, in millisecond buckets.")),
      pool_claimed_(m.Counter("sandboxset_sandboxes_claimed_total",
                              "Pool members handed out by claims.", {{"source", "k8s"}})) {}

ClaimMetrics::NamespaceSeries& ClaimMetrics::SeriesFor(ClaimSource source, std::string_view ns) {
  auto& by_ns = series_[static_cast<int>(source)];
  auto it = by_ns.find(ns);
  if (it != by_ns.end()) return it->second;
  Families& f = families_[static_cast<int>(source)];
  std::string n(ns);
  NamespaceSeries s{};
  for (int ok = 0; ok < 2; ++ok) {
    for (int l = 0; l < kLockTypes; ++l) {
      s.total[ok][l] = &f.total.Add({{"namespace", n},
                                     {"result", ok ? "success" : "failure"},
                                     {"lock_type", kLockTypeNames[l]}});
    }
  }
  s.duration =
      f.duration ? &f.duration->Add({{"namespace", n}}, obs::DefaultDurationBuckets()) : nullptr;
  s.retries = &f.retries.Add({{"namespace", n}}, obs::RetryBuckets());
  for (int l = 0; l < kLockTypes; ++l) {
    s.fast[l] = &fast_duration_.Add({{"namespace", n}, {"lock_type", kLockTypeNames[l]}},
                                    obs::FastDurationBuckets());
  }
  return by_ns.emplace(std::move(n), std::move(s)).first->second;
}

void ClaimMetrics::Record(ClaimSource source, std::string_view ns, std::string_view pool, bool ok,
                          std::string_view lock_type, double seconds, int retries) {
  const int lock = LockTypeIndex(lock_type);
  std::lock_guard guard(mu_);
  NamespaceSeries& s = SeriesFor(source, ns);
  s.total[ok ? 1 : 0][lock]->Increment();
  if (s.duration) s.duration->Observe(seconds);
  s.fast[lock]->Observe(seconds);
  s.retries->Observe(retries);
  if (ok && lock == 0) {
    auto it = s.pool_claimed.find(pool);
    if (it == s.pool_claimed.end()) {
      std::string p(pool);
      prometheus::Counter* c = &pool_claimed_.Add({{"namespace", std::string(ns)}, {"name", p}});
      it = s.pool_claimed.emplace(std::move(p), c).first;
    }
    it->second->Increment();
  }
}

}  // namespace warren::controller::claim
