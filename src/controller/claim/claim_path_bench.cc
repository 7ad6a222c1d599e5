// The claim path without HTTP or envd: PoolClaimer::Claim (one compare-and-swap that detaches
// the member, then the commit write) against a real SQLite store, beside the reference of one
// plain compare-and-swap Update of a member, measured in the same run; and the same claims with
// tracing on (BM_PoolClaim/1: each claim under a request span, as the API makes one, its steps
// exported by the OTLP exporter to a receiver in this process) beside tracing off
// (BM_PoolClaim/0). Compare them interleaved: claim_path_bench --benchmark_filter=PoolClaim
// --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true

#include <benchmark/benchmark.h>

#include "api/kinds.h"
#include "base/check.h"
#include "controller/claim/pool_claimer.h"
#include "controller/sandboxset_member.h"
#include "controller/sandboxset_revision.h"
#include "controller/testing/pool_fixture.h"
#include "net/http_server.h"
#include "obs/metrics.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"
#include "trace/otlp_http_exporter.h"
#include "trace/span.h"

namespace warren::controller::claim {
namespace {

constexpr int kBatch = 256;

struct Fixture {
  store::testing::TempStore store;
  api::Object set;
  TemplateRevision revision;

  Fixture() {
    auto created = store->Create(store::testing::MakeSandboxSet("bench", 0));
    CHECK_OK(created.status());
    set = *created;
    revision = ComputeRevision(set, nullptr);
  }

  // `n` Ready members, written the way the set controller and the node agent write them.
  std::vector<api::Object> Refill(int n) {
    std::vector<api::Object> out;
    for (int i = 0; i < n; ++i) {
      auto m = store->Create(MakeMember(set, revision));
      CHECK_OK(m.status());
      m->status() = {{"phase", "Running"},
                     {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}};
      auto ready = store->UpdateStatus(*m);
      CHECK_OK(ready.status());
      out.push_back(*ready);
    }
    return out;
  }
};

// An OTLP/HTTP receiver that takes every batch (what a collector on the host would do).
std::unique_ptr<net::HttpServer> StartReceiver() {
  net::Router router;
  router.Add("POST", "/v1/traces",
             [](net::Request&&, net::Responder r) { r.Send(net::Response::Json(200, "{}")); });
  auto server = net::HttpServer::Start(net::ServerOptions{.loop_threads = 1}, std::move(router));
  CHECK_OK(server.status());
  return std::move(*server);
}

void BM_PoolClaim(benchmark::State& state) {
  const bool traced = state.range(0) == 1;
  std::unique_ptr<net::HttpServer> receiver;
  obs::Metrics metrics;
  std::unique_ptr<trace::OtlpHttpExporter> exporter;
  if (traced) {
    receiver = StartReceiver();
    trace::OtlpExporterOptions options;
    options.endpoint = "http://127.0.0.1:" + std::to_string(receiver->port());
    auto created = trace::OtlpHttpExporter::Create(options, metrics);
    CHECK_OK(created.status());
    exporter = std::move(*created);
    trace::Install(*exporter);
  }
  Fixture f;
  PoolInformers informers(f.store.store(), controller::testing::TestSecrets());
  PoolClaimer claimer(informers, nullptr, nullptr);
  CHECK_OK(informers.Start());
  ClaimRequest req;
  req.namespace_ = "default";
  req.pool = "bench";
  req.owner = "bench";
  req.access_token = std::string(64, 'a');
  req.env_vars = {{"A", "1"}};
  req.create_on_no_stock = false;
  int left = 0;
  for (auto _ : state) {
    if (left == 0) {
      state.PauseTiming();
      f.Refill(kBatch);
      while (claimer.index().Available("default", "bench") < kBatch) {
      }
      left = kBatch;
      state.ResumeTiming();
    }
    {
      trace::Span request("HTTP POST /sandboxes", trace::Span::Root{});
      auto r = claimer.Claim(req);
      CHECK_OK(r.status());
    }
    --left;
  }
  informers.Stop();
  if (traced) {
    trace::Uninstall();
    exporter->Shutdown();
    state.counters["spans_dropped"] = static_cast<double>(exporter->dropped());
  }
}
BENCHMARK(BM_PoolClaim)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Reference: one compare-and-swap Update of a member (what a claim with a single write costs).
void BM_OneCasUpdate(benchmark::State& state) {
  Fixture f;
  std::vector<api::Object> members;
  size_t next = 0;
  for (auto _ : state) {
    if (next == members.size()) {
      state.PauseTiming();
      members = f.Refill(kBatch);
      next = 0;
      state.ResumeTiming();
    }
    api::Object m = members[next++];
    m.metadata.labels["agents.kruise.io/sandbox-claimed"] = "true";
    m.metadata.owner_references.clear();
    CHECK_OK(f.store->Update(std::move(m)).status());
  }
}
BENCHMARK(BM_OneCasUpdate)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace warren::controller::claim
