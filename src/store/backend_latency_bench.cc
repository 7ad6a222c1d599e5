// One client's create, get and compare-and-swap update latency on each backend, beside each
// other in one run: SQLite (WAL, synchronous=NORMAL, a temp dir on disk) against a one-member
// etcd whose data is on the same disk (it fsyncs every commit) and one on tmpfs (what the store
// tests use). Run: build/release/src/store/backend_latency_bench

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "api/kinds.h"
#include "store/testing/backend_store.h"
#include "store/testing/objects.h"

namespace warren::store {
namespace {

using testing::Backend;
using testing::BackendStore;
using testing::BackendStoreOptions;
using testing::MakeSandbox;

// range(0): 0 = SQLite, 1 = etcd on disk, 2 = etcd on tmpfs.
std::unique_ptr<BackendStore> Open(benchmark::State& state) {
  BackendStoreOptions options;
  options.etcd_on_disk = state.range(0) == 1;
  Backend backend = state.range(0) == 0 ? Backend::kSqlite : Backend::kEtcd;
  state.SetLabel(state.range(0) == 0    ? "sqlite"
                 : options.etcd_on_disk ? "etcd-disk"
                                        : "etcd-tmpfs");
  return std::make_unique<BackendStore>(backend, options);
}

void BM_Create(benchmark::State& state) {
  auto s = Open(state);
  int i = 0;
  for (auto _ : state) {
    auto r = (*s)->Create(MakeSandbox(fmt::format("c{}", i++)));
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
}

void BM_Get(benchmark::State& state) {
  auto s = Open(state);
  if (!(*s)->Create(MakeSandbox("g")).ok()) state.SkipWithError("create failed");
  for (auto _ : state) {
    auto r = (*s)->Get(api::SandboxKind(), "default", "g");
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
}

// Update with the resourceVersion just read: a get plus a compare-and-swap write.
void BM_GetThenUpdate(benchmark::State& state) {
  auto s = Open(state);
  if (!(*s)->Create(MakeSandbox("u")).ok()) state.SkipWithError("create failed");
  int i = 0;
  for (auto _ : state) {
    auto cur = (*s)->Get(api::SandboxKind(), "default", "u");
    if (!cur.ok()) state.SkipWithError(cur.status().ToString().c_str());
    cur->metadata.labels["n"] = std::to_string(i++);
    auto r = (*s)->Update(*cur);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
}

BENCHMARK(BM_Create)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Get)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GetThenUpdate)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace warren::store
