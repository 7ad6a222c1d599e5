// Store throughput and latency, printed beside raw SQLite measured in the same run.
//
//   store_bench [--quick] [--seconds N] [--dir DIR]
//
// For synchronous=FULL and =NORMAL side by side:
//   reference  raw SQLite: one INSERT per transaction in WAL mode (what a naive store pays)
//   create/s   Store::Create with 1 writer and with 16 concurrent writers (group commit)
//   get/s      Store::Get with 1 and 4 reader threads
//   CAS        Store::Update with a resourceVersion precondition, open loop at a fixed rate
//              (500/s: the claim fast path's target), latency from the scheduled start
//   watch      write → event delivered to a watcher, at a steady write rate

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "base/log.h"
#include "store/sqlite_store.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::store {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Config {
  bool quick = false;
  double seconds = 3;  // per throughput phase
  std::string dir;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5));
  return v[i];
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

api::Object Member(int i) {
  return testing::MakeSandbox(
      fmt::format("sbx-{:06}", i),
      {{"agents.kruise.io/sandbox-pool", "pool"}, {"agents.kruise.io/sandbox-claimed", "false"}});
}

// Raw SQLite, one row per transaction, doc of the size our objects have.
double RawSqliteInsertsPerSecond(const std::string& path, bool full, double seconds) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
  sqlite3_exec(db, full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", nullptr, nullptr,
               nullptr);
  sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, doc TEXT)", nullptr, nullptr, nullptr);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO t(doc) VALUES(?)", -1, &st, nullptr);
  std::string doc = api::ObjectToJsonText(Member(0));
  int n = 0;
  auto start = Clock::now();
  while (Seconds(Clock::now() - start) < seconds) {
    sqlite3_bind_text(st, 1, doc.data(), static_cast<int>(doc.size()), SQLITE_STATIC);
    sqlite3_step(st);
    sqlite3_reset(st);
    ++n;
  }
  double rate = n / Seconds(Clock::now() - start);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rate;
}

struct Figures {
  double raw_inserts = 0;
  double create_1 = 0;
  double create_16 = 0;
  double get_1 = 0;
  double get_4 = 0;
  double cas_rate = 0;
  double cas_p50 = 0, cas_p99 = 0, cas_max = 0;
  double watch_p50 = 0, watch_p99 = 0;
  size_t objects = 0;
};

// Creates from `threads` threads for `seconds`; returns creates/s. Names continue from `next`.
double CreateRate(Store& store, int threads, double seconds, std::atomic<int>& next) {
  std::atomic<int> done{0};
  std::atomic<bool> failed{false};
  auto start = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      while (Seconds(Clock::now() - start) < seconds) {
        if (!store.Create(Member(next++)).ok()) failed = true;
        ++done;
      }
    });
  }
  for (auto& t : ts) t.join();
  if (failed) fmt::print(stderr, "warning: some creates failed\n");
  return done / Seconds(Clock::now() - start);
}

double GetRate(Store& store, int threads, double seconds, int objects) {
  std::atomic<int> done{0};
  auto start = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::mt19937 rng(t);
      while (Seconds(Clock::now() - start) < seconds) {
        auto r = store.Get(api::SandboxKind(), "default",
                           fmt::format("sbx-{:06}", rng() % static_cast<unsigned>(objects)));
        if (r.ok()) ++done;
      }
    });
  }
  for (auto& t : ts) t.join();
  return done / Seconds(Clock::now() - start);
}

// Open loop: claim i is due at start + i/rate; a pool of workers takes due claims. Latency is
// from the due time, so a stall shows up in every claim that waited behind it.
void CasLatency(Store& store, double rate, double seconds, int objects, Figures& f) {
  const int total = static_cast<int>(rate * seconds);
  // Pre-read the objects (a claimer works from its in-memory index of available members).
  std::vector<api::Object> pool;
  for (int i = 0; i < total && i < objects; ++i) {
    auto r = store.Get(api::SandboxKind(), "default", fmt::format("sbx-{:06}", i));
    if (r.ok()) pool.push_back(std::move(*r));
  }
  std::atomic<int> next{0};
  std::mutex mu;
  std::vector<double> latencies;
  auto start = Clock::now() + 50ms;
  std::vector<std::thread> ts;
  for (int t = 0; t < 16; ++t) {
    ts.emplace_back([&] {
      while (true) {
        int i = next++;
        if (i >= static_cast<int>(pool.size())) return;
        auto due = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(i / rate));
        std::this_thread::sleep_until(due);
        api::Object claim = pool[static_cast<size_t>(i)];
        claim.metadata.labels["agents.kruise.io/sandbox-claimed"] = "true";
        claim.metadata.annotations["agents.kruise.io/owner"] = "bench";
        auto r = store.Update(std::move(claim));
        double ms = std::chrono::duration<double, std::milli>(Clock::now() - due).count();
        if (!r.ok()) fmt::print(stderr, "claim failed: {}\n", r.status().ToString());
        std::lock_guard lock(mu);
        latencies.push_back(ms);
      }
    });
  }
  for (auto& t : ts) t.join();
  f.cas_rate = latencies.size() / Seconds(Clock::now() - start);
  f.cas_p50 = Percentile(latencies, 50);
  f.cas_p99 = Percentile(latencies, 99);
  f.cas_max = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
}

void WatchLatency(Store& store, double rate, int count, Figures& f) {
  WatchOptions opts;
  opts.resource_version = store.CurrentRevision();
  auto watcher = store.Watch(&api::SandboxKind(), opts);
  if (!watcher.ok()) return;
  std::vector<double> latencies;
  std::thread reader([&] {
    while (static_cast<int>(latencies.size()) < count) {
      auto e = (*watcher)->Next(5s);
      if (!e.ok() || !e->has_value()) return;
      auto now = Clock::now().time_since_epoch().count();
      const auto& ann = (*e)->object->metadata.annotations;
      auto it = ann.find("bench/sent");
      if (it == ann.end()) continue;
      latencies.push_back((now - std::stoll(it->second)) / 1e6);
    }
  });
  auto obj = *store.Create(Member(9'000'000));
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(i / rate)));
    obj.metadata.annotations["bench/sent"] =
        std::to_string(Clock::now().time_since_epoch().count());
    auto r = store.Update(obj);
    if (r.ok()) obj = std::move(*r);
  }
  reader.join();
  f.watch_p50 = Percentile(latencies, 50);
  f.watch_p99 = Percentile(latencies, 99);
}

Figures Run(const Config& cfg, SqliteStoreOptions::Sync sync) {
  Figures f;
  testing::TempDir dir;
  bool full = sync == SqliteStoreOptions::Sync::kFull;
  f.raw_inserts = RawSqliteInsertsPerSecond(dir.path() + "/raw.db", full, cfg.seconds);

  SqliteStoreOptions options;
  options.path = dir.path() + "/store.db";
  options.sync = sync;
  auto store = SqliteStore::Open(options);
  if (!store.ok()) {
    fmt::print(stderr, "open: {}\n", store.status().ToString());
    std::exit(1);
  }
  std::atomic<int> next{0};
  f.create_1 = CreateRate(**store, 1, cfg.seconds, next);
  f.create_16 = CreateRate(**store, 16, cfg.seconds, next);
  int objects = next.load();
  f.objects = static_cast<size_t>(objects);
  f.get_1 = GetRate(**store, 1, cfg.seconds, objects);
  f.get_4 = GetRate(**store, 4, cfg.seconds, objects);
  CasLatency(**store, 500, cfg.quick ? 1 : cfg.seconds * 3, objects, f);
  WatchLatency(**store, 200, cfg.quick ? 100 : 1000, f);
  return f;
}

}  // namespace
}  // namespace warren::store

int main(int argc, char** argv) {
  using namespace warren::store;
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      cfg.quick = true;
      cfg.seconds = 0.3;
    } else if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      cfg.seconds = std::atof(argv[++i]);
    } else {
      fmt::print(stderr, "usage: store_bench [--quick] [--seconds N]\n");
      return 2;
    }
  }
  warren::base::SetLogLevel("warn");
  Figures full = Run(cfg, warren::store::SqliteStoreOptions::Sync::kFull);
  Figures normal = Run(cfg, warren::store::SqliteStoreOptions::Sync::kNormal);
  auto row = [](const char* name, double a, double b, const char* fmt_spec = "{:>12.0f}") {
    fmt::print("{:<46}", name);
    fmt::print(fmt::runtime(fmt_spec), a);
    fmt::print(fmt::runtime(fmt_spec), b);
    fmt::print("\n");
  };
  fmt::print("{:<46}{:>12}{:>12}\n", "store bench (WAL)", "sync=FULL", "sync=NORMAL");
  row("reference: raw sqlite insert/s (1 txn/row)", full.raw_inserts, normal.raw_inserts);
  row("warren create/s, 1 writer", full.create_1, normal.create_1);
  row("warren create/s, 16 writers (group commit)", full.create_16, normal.create_16);
  row("warren get/s, 1 reader", full.get_1, normal.get_1);
  row("warren get/s, 4 readers", full.get_4, normal.get_4);
  row("CAS update, open loop at 500/s: achieved/s", full.cas_rate, normal.cas_rate);
  row("CAS update p50 ms", full.cas_p50, normal.cas_p50, "{:>12.2f}");
  row("CAS update p99 ms", full.cas_p99, normal.cas_p99, "{:>12.2f}");
  row("CAS update max ms", full.cas_max, normal.cas_max, "{:>12.2f}");
  row("watch latency (write → event) p50 ms", full.watch_p50, normal.watch_p50, "{:>12.2f}");
  row("watch latency (write → event) p99 ms", full.watch_p99, normal.watch_p99, "{:>12.2f}");
  fmt::print("objects in store: {} / {}; the store defaults to sync=NORMAL (see README.md)\n",
             full.objects, normal.objects);
  return 0;
}
