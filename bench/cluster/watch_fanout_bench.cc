// Watch fan-out: how long after a write each of three node processes sees its event, on etcd
// (a real Raft cluster) beside the embedded SQLite store measured in the same run.
//
//   watch_fanout_bench [--n 500] [--members 3] [--subscribers 3] [--spread] [--etcd-dir DIR]
//                      [--quick]
//
// etcd: EtcdCluster starts `--members` etcd processes (data under --etcd-dir, default /tmp: on
// disk, so etcd fsyncs each commit as it does in `warren server --store etcd://`); one writer
// EtcdStore (a server replica) and `--subscribers` more EtcdStore instances, each with its own
// etcd watch, as `warren node` processes have. With --spread subscriber k names the members
// starting at member k (each node on its own member); by default all name member 0 first, as
// tests/e2e/sdk/cluster.mjs starts them (one --store URL for everything).
// SQLite: one store (WAL, synchronous=NORMAL, the default) with the subscribers in its process
// (the embedded server's controllers and node agent watch it this way).
//
// The writer creates N Sandbox objects one at a time and waits until every subscriber has seen
// the event before the next (so no figure includes queueing behind an earlier write). For each
// event and subscriber: write start → event (always ≥ 0) and write acknowledged → event (negative
// when the event arrived before the writer got its answer). The writer's own create latency is
// the reference printed beside them.

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/kinds.h"
#include "base/log.h"
#include "base/testing/temp_dir.h"
#include "store/etcd_store.h"
#include "store/sqlite_store.h"
#include "store/testing/etcd_process.h"
#include "store/testing/objects.h"

namespace warren::store {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Config {
  int n = 500;
  int members = 3;
  int subscribers = 3;
  bool spread = false;
  std::string etcd_dir = "/tmp";
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5));
  return v[i];
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string Name(int i) { return fmt::format("fan-{:06}", i); }

// Arrival times of one subscriber's events, indexed by object; written on the store's watch
// thread, read by the writer once it has been told.
struct Arrivals {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int64_t> ns;  // guarded by mu; 0 = not yet seen
  int seen = 0;             // guarded by mu
  std::unique_ptr<Subscription> subscription;
};

struct Figures {
  std::vector<double> write_ms;                    // create call, start → acknowledged
  std::vector<std::vector<double>> from_start_ms;  // per subscriber
  std::vector<std::vector<double>> from_ack_ms;    // per subscriber
  std::vector<double> max_from_ack_ms;             // per write, the slowest subscriber
  int missed = 0;                                  // events not seen within 10 s
};

// Subscribes `sub` to Sandbox ADDED events from now on.
void Subscribe(Store& store, Arrivals& sub, int n) {
  sub.ns.assign(static_cast<size_t>(n), 0);
  WatchOptions options;
  options.resource_version = store.CurrentRevision();
  WatchSink sink;
  sink.on_event = [&sub](const WatchEvent& e) {
    int64_t now = NowNs();
    if (e.type != EventType::kAdded) return;
    const std::string& name = e.object->metadata.name;
    if (name.rfind("fan-", 0) != 0) return;
    size_t i = std::strtoul(name.c_str() + 4, nullptr, 10);
    std::lock_guard lock(sub.mu);
    if (i < sub.ns.size() && sub.ns[i] == 0) {
      sub.ns[i] = now;
      ++sub.seen;
      sub.cv.notify_all();
    }
  };
  sink.on_close = [](const Status& s) { fmt::print(stderr, "watch closed: {}\n", s.ToString()); };
  auto r = store.Subscribe(&api::SandboxKind(), options, std::move(sink));
  if (!r.ok()) {
    fmt::print(stderr, "subscribe failed: {}\n", r.status().ToString());
    std::exit(1);
  }
  sub.subscription = std::move(*r);
}

// Creates N objects one at a time through `writer`, each after every subscriber saw the last.
Figures Measure(Store& writer, std::vector<std::unique_ptr<Arrivals>>& subs, int n) {
  Figures r;
  r.from_start_ms.resize(subs.size());
  r.from_ack_ms.resize(subs.size());
  // A few writes first, not counted (connections, caches, the first watch round trip).
  for (int i = 0; i < 5; ++i) {
    (void)writer.Create(testing::MakeSandbox(fmt::format("warmup-{}", i)));
  }
  std::this_thread::sleep_for(100ms);
  for (int i = 0; i < n; ++i) {
    int64_t start = NowNs();
    auto created = writer.Create(testing::MakeSandbox(Name(i)));
    int64_t ack = NowNs();
    if (!created.ok()) {
      fmt::print(stderr, "create failed: {}\n", created.status().ToString());
      std::exit(1);
    }
    r.write_ms.push_back((ack - start) / 1e6);
    double slowest = -1e9;
    for (size_t k = 0; k < subs.size(); ++k) {
      Arrivals& sub = *subs[k];
      std::unique_lock lock(sub.mu);
      if (!sub.cv.wait_for(lock, 10s, [&] { return sub.ns[static_cast<size_t>(i)] != 0; })) {
        ++r.missed;
        continue;
      }
      int64_t at = sub.ns[static_cast<size_t>(i)];
      r.from_start_ms[k].push_back((at - start) / 1e6);
      r.from_ack_ms[k].push_back((at - ack) / 1e6);
      slowest = std::max(slowest, (at - ack) / 1e6);
    }
    if (slowest > -1e9) r.max_from_ack_ms.push_back(slowest);
  }
  for (auto& sub : subs) sub->subscription->Cancel();
  return r;
}

Figures RunEtcd(const Config& cfg) {
  testing::EtcdCluster etcd(cfg.members, cfg.etcd_dir);
  auto open = [&](size_t first) {
    EtcdStoreOptions o;
    for (size_t j = 0; j < etcd.endpoints().size(); ++j) {
      o.endpoints.push_back(etcd.endpoints()[(first + j) % etcd.endpoints().size()]);
    }
    o.prefix = "/bench";
    auto s = EtcdStore::Open(o);
    if (!s.ok()) {
      fmt::print(stderr, "etcd store: {}\n", s.status().ToString());
      std::exit(1);
    }
    return std::move(*s);
  };
  auto writer = open(0);
  std::vector<std::unique_ptr<EtcdStore>> nodes;
  std::vector<std::unique_ptr<Arrivals>> subs;
  for (int k = 0; k < cfg.subscribers; ++k) {
    nodes.push_back(open(cfg.spread ? static_cast<size_t>(k) : 0));
    subs.push_back(std::make_unique<Arrivals>());
    Subscribe(*nodes.back(), *subs.back(), cfg.n);
  }
  return Measure(*writer, subs, cfg.n);
}

Figures RunSqlite(const Config& cfg) {
  base::testing::TempDir dir;
  SqliteStoreOptions o;
  o.path = dir.path() + "/store.db";
  auto store = SqliteStore::Open(o);
  if (!store.ok()) {
    fmt::print(stderr, "sqlite store: {}\n", store.status().ToString());
    std::exit(1);
  }
  std::vector<std::unique_ptr<Arrivals>> subs;
  for (int k = 0; k < cfg.subscribers; ++k) {
    subs.push_back(std::make_unique<Arrivals>());
    Subscribe(**store, *subs.back(), cfg.n);
  }
  return Measure(**store, subs, cfg.n);
}

std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// `ratios`: false for ack → event rows, a signed delay near zero on SQLite (a ratio to it
// would only magnify noise).
void PrintRow(const std::string& name, const std::vector<double>& etcd,
              const std::vector<double>& sqlite, bool ratios = true) {
  double e50 = Percentile(etcd, 50), e99 = Percentile(etcd, 99);
  double s50 = Percentile(sqlite, 50), s99 = Percentile(sqlite, 99);
  auto ratio = [ratios](double a, double b) {
    return ratios && b > 0 ? fmt::format("{:.1f}×", a / b) : std::string("-");
  };
  fmt::print("  {:<44} {:>8.3f} {:>8.3f}   {:>8.3f} {:>8.3f}   {:>7} {:>7}\n", name, s50, s99, e50,
             e99, ratio(e50, s50), ratio(e99, s99));
}

}  // namespace
}  // namespace warren::store

int main(int argc, char** argv) {
  using namespace warren::store;
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      cfg.n = 50;
    } else if (a == "--n" && i + 1 < argc) {
      cfg.n = std::atoi(argv[++i]);
    } else if (a == "--members" && i + 1 < argc) {
      cfg.members = std::atoi(argv[++i]);
    } else if (a == "--subscribers" && i + 1 < argc) {
      cfg.subscribers = std::atoi(argv[++i]);
    } else if (a == "--spread") {
      cfg.spread = true;
    } else if (a == "--etcd-dir" && i + 1 < argc) {
      cfg.etcd_dir = argv[++i];
    } else {
      fmt::print(stderr,
                 "usage: watch_fanout_bench [--n N] [--members M] [--subscribers S] [--spread] "
                 "[--etcd-dir DIR] [--quick]\n");
      return 2;
    }
  }
  if (cfg.n < 1 || cfg.members < 1 || cfg.subscribers < 1) {
    fmt::print(stderr, "watch_fanout_bench: --n, --members and --subscribers must be positive\n");
    return 2;
  }
  if (::access("/usr/bin/etcd", X_OK) != 0) {
    fmt::print("watch_fanout_bench: /usr/bin/etcd is missing (apt install etcd-server); skipped\n");
    return 77;
  }
  warren::base::SetLogLevel("warn");
  std::string load_before = LoadAvg();
  Figures sqlite = RunSqlite(cfg);
  Figures etcd = RunEtcd(cfg);
  std::string load_after = LoadAvg();

  utsname u{};
  ::uname(&u);
  fmt::print(
      "watch fan-out: {} creates one at a time, {} subscriber(s); etcd {} member(s), data in {}, "
      "subscribers {}\n",
      cfg.n, cfg.subscribers, cfg.members, cfg.etcd_dir,
      cfg.spread ? "each on its own member first (--spread)" : "all on member 0 first");
  fmt::print("host: kernel {}, {} cores, load {} → {}\n", u.release,
             std::thread::hardware_concurrency(), load_before, load_after);
  fmt::print("  {:<44} {:>17}   {:>17}   {:>15}\n", "ms", "SQLite embedded", "etcd cluster",
             "etcd / SQLite");
  fmt::print("  {:<44} {:>8} {:>8}   {:>8} {:>8}   {:>7} {:>7}\n", "", "p50", "p99", "p50", "p99",
             "p50", "p99");
  PrintRow("reference: the write itself (create → ack)", etcd.write_ms, sqlite.write_ms);
  for (int k = 0; k < cfg.subscribers; ++k) {
    auto ks = static_cast<size_t>(k);
    PrintRow(fmt::format("subscriber {}: write start → event", k), etcd.from_start_ms[ks],
             sqlite.from_start_ms[ks]);
    PrintRow(fmt::format("subscriber {}: write ack → event", k), etcd.from_ack_ms[ks],
             sqlite.from_ack_ms[ks], false);
  }
  PrintRow("slowest of the subscribers: ack → event", etcd.max_from_ack_ms, sqlite.max_from_ack_ms,
           false);
  fmt::print(
      "(ack → event < 0: the event reached the subscriber before the writer's answer; no ratio: a "
      "signed delay)\n");
  if (etcd.missed + sqlite.missed > 0) {
    fmt::print("events not seen within 10 s: etcd {}, SQLite {}\n", etcd.missed, sqlite.missed);
    return 1;
  }
  return 0;
}
