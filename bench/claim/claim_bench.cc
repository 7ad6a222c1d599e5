// bench/claim: E2B creates served from a warm pool, over HTTP, against a real `warren server`
// (node agent, real sandboxes from the cached `base` image), beside cold creates measured in the
// same run. See README.md.
//
//   claim_bench [--pool 50] [--claims 2000] [--concurrency 1,16] [--rates 500] [--cold 20]
//               [--idle-seconds 10] [--hibernated 20] [--tail] [--trace-slowest N]
//   claim_bench --tracing ROUNDS [--pool 50] [--claims 1000]   # the claim path, tracing off vs on
//
// With CLAIM_BENCH_LOG=<file> in the environment the server's log is written there at the end.
//
// Needs root (real sandboxes); exits 77 (skipped) otherwise.

#include <fmt/format.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/json.h"
#include "api/object_codec.h"
#include "api/types/labels.h"
#include "base/check.h"
#include "base/encoding.h"
#include "base/traceparent.h"
#include "controller/sandboxset_member.h"
#include "e2b_client.h"
#include "otlp_receivers.h"
#include "processes.h"
#include "trace/tracer.h"

namespace warren::bench {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using pool_testing::AvailableReplicas;
using pool_testing::E2bClient;
using pool_testing::Eventually;
using pool_testing::ListSandboxes;
using pool_testing::SetStatusCount;
using pool_testing::WarrenServer;

struct Options {
  int pool = 50;
  int claims = 2000;
  std::vector<int> concurrency = {1, 16};
  int cold = 20;
  int idle_seconds = 10;
  std::vector<int> rates = {500};  // open-loop runs (claims/s)
  int hibernated = 20;             // claims that wake an idle-paused member, per pause kind
};

struct Summary {
  size_t n = 0;
  double p50 = 0, p99 = 0, max = 0;
};

Summary Summarize(std::vector<double> ms) {
  Summary s;
  s.n = ms.size();
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    size_t i = static_cast<size_t>(q * (ms.size() - 1) + 0.5);
    return ms[std::min(i, ms.size() - 1)];
  };
  s.p50 = at(0.50);
  s.p99 = at(0.99);
  s.max = ms.back();
  return s;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// POST /sandboxes from a pool of `template_id`; the sandbox id.
Result<std::string> CreateSandbox(E2bClient& e2b, const std::string& template_id,
                                  bool create_on_no_stock, const std::string& traceparent = "") {
  ASSIGN_OR_RETURN(auto doc,
                   e2b.Create(template_id, create_on_no_stock, api::Json::object(), traceparent));
  return doc.value("sandboxID", "");
}

// --trace-slowest N: every claim of a row carries a sampled traceparent of its own, the server
// exports its spans to `span_recorder`, and each row prints its N slowest claims' spans.
int trace_slowest = 0;
SpanRecorder* span_recorder = nullptr;

// A new sampled trace context, for one claim.
base::TraceContext NewTraceContext() {
  return {.trace_id = trace::NewTraceId(), .span_id = trace::NewSpanId(), .flags = 1};
}

// Sandbox objects in the store (any state), or -1.
int SandboxCount(WarrenServer& server) {
  auto sandboxes = ListSandboxes(server, /*selector=*/"");
  return sandboxes.ok() ? static_cast<int>(sandboxes->size()) : -1;
}

// Members of `set` a claim could take now, counted from the sandboxes themselves, or -1. Not the
// set's status: while claims arrive it is written at most every 100 ms, so right after a short
// burst it could still say "full" with every member claimed, and the next burst then waited for
// refills (c=16 claims measured 0.5-0.8 s so).
int ClaimableMembers(WarrenServer& server, const std::string& set) {
  auto sandboxes = ListSandboxes(server, fmt::format("{}={}", api::labels::kSandboxPool, set));
  if (!sandboxes.ok()) return -1;
  int n = 0;
  for (auto& doc : *sandboxes) {
    auto o = api::ObjectFromJson(std::move(doc));
    if (o.ok() && controller::IsClaimable(*o)) ++n;
  }
  return n;
}

// Kills in the background so refills and deletions overlap the next burst's wait, not the
// burst itself.
class Reaper {
 public:
  explicit Reaper(E2bClient& e2b) : e2b_(e2b) {
    for (int i = 0; i < 4; ++i) threads_.emplace_back([this] { Run(); });
  }
  ~Reaper() { Drain(); }
  void Add(std::string id) {
    std::lock_guard lock(mu_);
    ids_.push_back(std::move(id));
    cv_.notify_one();
  }
  void Drain() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Run() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return done_ || !ids_.empty(); });
      if (ids_.empty()) return;
      std::string id = std::move(ids_.back());
      ids_.pop_back();
      lock.unlock();
      e2b_.Kill(id).IgnoreError();
      lock.lock();
    }
  }
  E2bClient& e2b_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> ids_;
  bool done_ = false;
  std::vector<std::thread> threads_;
};

// One claim's client-side times (steady clock) and trace id, for --trace-slowest.
struct ClaimTimes {
  std::string trace_id;
  Clock::time_point scheduled, sent, done;
};

struct RunResult {
  std::vector<double> ms;
  std::vector<int> position;      // per claim: its index within its burst (RunClaims only)
  std::vector<ClaimTimes> times;  // per claim, with --trace-slowest (RunClaims only)
  double busy_seconds = 0;        // summed burst wall time
  int errors = 0;
  std::string first_error;
};

// `total` claims at `concurrency`, in bursts the pool can serve: each burst waits for the pool
// to be full, then claims what is available (creating on no stock is off: a claim never turns
// into a cold create; if the pool ran short it would wait for stock, and that wait counts).
// Claimed sandboxes are killed as each claim returns (`kill_during`: their teardown and the
// refills compete with the burst, as when users come and go), or after the burst, once the
// previous burst's teardown is over (the claim path alone).
// With `rate` > 0 the claims are sent open loop at that rate (claim i of a burst at
// start + i/rate, by `concurrency` workers) and each latency counts from its scheduled time, so a
// stall is charged to every claim queued behind it.
RunResult RunClaims(WarrenServer& server, E2bClient& e2b, const std::string& set, int pool,
                    int total, int concurrency, bool kill_during, double rate = 0) {
  RunResult result;
  Reaper reaper(e2b);
  std::mutex mu;
  int done = 0;
  while (done < total) {
    if (!Eventually(
            [&] {
              return ClaimableMembers(server, set) >= pool &&
                     (kill_during || SandboxCount(server) == pool);
            },
            600s)) {
      result.first_error = "the pool did not refill within 10 minutes";
      ++result.errors;
      break;
    }
    int burst = std::min(pool, total - done);
    std::vector<std::string> claimed;
    std::atomic<int> next{0};
    auto start = Clock::now();
    auto work = [&] {
      for (int i = next++; i < burst; i = next++) {
        auto t0 = Clock::now();
        if (rate > 0) {
          t0 = start +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i / rate));
          std::this_thread::sleep_until(t0);
        }
        ClaimTimes times;
        std::string traceparent;
        if (span_recorder != nullptr) {
          base::TraceContext context = NewTraceContext();
          times.trace_id = base::TraceIdHex(context.trace_id);
          traceparent = base::FormatTraceparent(context);
        }
        times.scheduled = t0;
        times.sent = Clock::now();
        auto id = CreateSandbox(e2b, set, /*create_on_no_stock=*/false, traceparent);
        times.done = Clock::now();
        double ms = Ms(times.done - t0);
        std::lock_guard lock(mu);
        if (id.ok()) {
          result.ms.push_back(ms);
          result.position.push_back(i);
          if (span_recorder != nullptr) result.times.push_back(std::move(times));
          if (kill_during) {
            reaper.Add(*id);
          } else {
            claimed.push_back(*id);
          }
        } else {
          if (result.errors++ == 0) result.first_error = id.status().ToString();
        }
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < concurrency; ++t) threads.emplace_back(work);
    for (auto& t : threads) t.join();
    result.busy_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    for (auto& id : claimed) reaper.Add(std::move(id));
    done += burst;
  }
  reaper.Drain();
  return result;
}

// One create from `template_id`, timed into `result`; the sandbox id, or nullopt (counted as
// an error).
std::optional<std::string> TimedCreate(RunResult& result, E2bClient& e2b,
                                       const std::string& template_id, bool create_on_no_stock) {
  auto t0 = Clock::now();
  auto id = CreateSandbox(e2b, template_id, create_on_no_stock);
  double ms = Ms(Clock::now() - t0);
  result.busy_seconds += ms / 1000;
  if (!id.ok()) {
    if (result.errors++ == 0) result.first_error = id.status().ToString();
    return std::nullopt;
  }
  result.ms.push_back(ms);
  return *id;
}

RunResult RunCold(E2bClient& e2b, int n) {
  RunResult result;
  for (int i = 0; i < n; ++i) {
    if (auto id = TimedCreate(result, e2b, "base", /*create_on_no_stock=*/true)) {
      e2b.Kill(*id).IgnoreError();
    }
  }
  return result;
}

// One burst of `pool` claims at c=1 from the full pool with its refills held
// (scaleStrategy.maxUnavailable 0), killed after the burst: what a claim costs with `pool`
// members present and nothing else running, whatever the burst's length. The set's refills
// resume afterwards.
RunResult RunHeldClaims(WarrenServer& server, E2bClient& e2b, const std::string& set, int pool) {
  server.Apply(pool_testing::PoolManifest(set, pool, "  scaleStrategy:\n    maxUnavailable: 0\n"));
  RunResult result = RunClaims(server, e2b, set, pool, pool, 1, false);
  server.Apply(pool_testing::PoolManifest(set, pool));
  return result;
}

// `n` claims at c=1 from a pool of `n` whose members all paused while idle
// (spec.pauseStrategy `strategy`, idleSeconds 1), so each claim wakes one: refills are stopped
// once all are paused (scaleStrategy.maxUnavailable 0), or a refill's running member would be
// taken instead. Each sandbox is killed as its claim returns.
RunResult RunWokenClaims(WarrenServer& server, E2bClient& e2b, const std::string& set, int n,
                         const std::string& strategy) {
  RunResult result;
  const std::string pause = fmt::format("  pauseStrategy: {}\n", strategy);
  server.Apply(pool_testing::PoolManifest(set, n, pause));
  if (!Eventually([&] { return SetStatusCount(server, set, "hibernatedReplicas") >= n; }, 600s)) {
    result.first_error = "the pool's members did not all pause within 10 minutes";
    ++result.errors;
    return result;
  }
  server.Apply(
      pool_testing::PoolManifest(set, n, pause + "  scaleStrategy:\n    maxUnavailable: 0\n"));
  Reaper reaper(e2b);
  for (int i = 0; i < n; ++i) {
    if (auto id = TimedCreate(result, e2b, set, /*create_on_no_stock=*/false)) {
      reaper.Add(*id);
    }
  }
  reaper.Drain();
  server.http()
      .Do({.method = "DELETE",
           .target = "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets/" + set})
      .status()
      .IgnoreError();
  return result;
}

// The server's own view: quantiles of warren_claim_duration_seconds (lock_type="update") from
// /metrics, interpolated within buckets as Prometheus' histogram_quantile does.
std::pair<double, double> ServerSideQuantiles(WarrenServer& server) {
  auto r = server.http().Do({.method = "GET", .target = "/metrics"});
  if (!r.ok()) return {0, 0};
  std::vector<std::pair<double, double>> buckets;  // le, cumulative count
  std::istringstream in(r->body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("warren_claim_duration_seconds_bucket{", 0) != 0) continue;
    if (line.find("lock_type=\"update\"") == std::string::npos) continue;
    auto le = line.find("le=\"");
    auto end = line.find('"', le + 4);
    std::string bound = line.substr(le + 4, end - le - 4);
    double count = std::stod(line.substr(line.rfind(' ') + 1));
    buckets.push_back({bound == "+Inf" ? 1e9 : std::stod(bound), count});
  }
  std::sort(buckets.begin(), buckets.end());
  if (buckets.empty() || buckets.back().second == 0) return {0, 0};
  auto quantile = [&](double q) {
    double rank = q * buckets.back().second;
    double prev_le = 0, prev_count = 0;
    for (auto [le, count] : buckets) {
      if (count >= rank) {
        if (le >= 1e9) return prev_le * 1000;
        return 1000 * (prev_le +
                       (le - prev_le) * (rank - prev_count) / std::max(1e-9, count - prev_count));
      }
      prev_le = le;
      prev_count = count;
    }
    return prev_le * 1000;
  };
  return {quantile(0.5), quantile(0.99)};
}

// The node agent's cgroups for this data directory (node/options.cc: named by the directory's
// SHA-256): /sys/fs/cgroup/<controller>/warren-<hash>/<sandbox id>.
std::string CgroupParent(const std::string& controller, const std::string& data_dir) {
  char real[PATH_MAX];
  CHECK(realpath(data_dir.c_str(), real) != nullptr);
  return fmt::format("/sys/fs/cgroup/{}/warren-{}", controller,
                     base::Sha256Hex(real).substr(0, 12));
}

std::vector<std::string> SandboxCgroups(const std::string& parent) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(parent, ec)) {
    if (e.is_directory()) out.push_back(e.path());
  }
  return out;
}

// Empty when the file is gone (its cgroup was removed) or holds no number.
std::optional<uint64_t> ReadNumber(const std::string& path) {
  std::ifstream f(path);
  uint64_t v = 0;
  if (!(f >> v)) return std::nullopt;
  return v;
}

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.flush();
  return static_cast<bool>(f);
}

// Whether idle members should sit frozen: what an idle pool costs (CPU, memory) and what a
// thaw would add to a claim, measured on the pool's own members.
void MeasureIdlePool(const std::string& data_dir, size_t pool, int seconds) {
  // Sandboxes of earlier rows may still be tearing down: wait (up to a minute) until no more
  // cgroups than the pool's members are left, and count only the cgroups present at both reads.
  for (int i = 0; i < 600; ++i) {
    if (SandboxCgroups(CgroupParent("cpuacct", data_dir)).size() <= pool) break;
    std::this_thread::sleep_for(100ms);
  }
  auto cpu = SandboxCgroups(CgroupParent("cpuacct", data_dir));
  if (cpu.empty()) {
    fmt::print("idle pool: no member cgroups found\n");
    return;
  }
  auto usage = [](const std::string& c) { return ReadNumber(c + "/cpuacct.usage"); };
  std::vector<std::optional<uint64_t>> before;
  for (const auto& c : cpu) before.push_back(usage(c));
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  uint64_t used_ns = 0;
  size_t members = 0;
  uint64_t memory = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    auto after = usage(cpu[i]);
    if (!before[i] || !after || *after < *before[i]) continue;  // gone meanwhile
    used_ns += *after - *before[i];
    std::string name = std::filesystem::path(cpu[i]).filename();
    auto bytes =
        ReadNumber(CgroupParent("memory", data_dir) + "/" + name + "/memory.usage_in_bytes");
    if (!bytes) continue;
    memory += *bytes;
    ++members;
  }
  double cpu_ms = used_ns / 1e6;
  fmt::print(
      "idle pool: {} members, {:.1f} ms CPU in {} s ({:.3f}% of one core), {:.1f} MiB "
      "memory each ({} cgroups left during the window)\n",
      members, cpu_ms, seconds, 100.0 * cpu_ms / (seconds * 1000.0),
      memory / 1048576.0 / std::max<size_t>(1, members), cpu.size() - members);
  // Freeze and thaw each member the way the runtime pauses (cgroup v1 freezer); the thaw is
  // what a claim of a frozen member would add.
  std::vector<double> freeze_ms, thaw_ms;
  for (const auto& c : SandboxCgroups(CgroupParent("freezer", data_dir))) {
    auto wait_state = [&](const std::string& want) {
      for (int i = 0; i < 20000; ++i) {
        std::ifstream f(c + "/freezer.state");
        std::string state;
        f >> state;
        if (state == want) return true;
        std::this_thread::sleep_for(50us);
      }
      return false;
    };
    auto t0 = Clock::now();
    if (!WriteText(c + "/freezer.state", "FROZEN") || !wait_state("FROZEN")) continue;
    freeze_ms.push_back(Ms(Clock::now() - t0));
    auto t1 = Clock::now();
    if (!WriteText(c + "/freezer.state", "THAWED") || !wait_state("THAWED")) continue;
    thaw_ms.push_back(Ms(Clock::now() - t1));
  }
  Summary f = Summarize(freeze_ms), t = Summarize(thaw_ms);
  fmt::print(
      "freezer on idle members (n={}): freeze p50 {:.2f} / p99 {:.2f} ms, thaw p50 {:.2f} / "
      "p99 {:.2f} ms\n",
      t.n, f.p50, f.p99, t.p50, t.p99);
}

bool print_tail = false;  // --tail

// Where in their bursts the slowest 1 % of a row's claims were: a tail made of each burst's
// first claims has another cause (a wake-up, a cold cache) than one spread over the bursts.
void PrintTail(const RunResult& r) {
  std::vector<size_t> order(r.ms.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.ms[a] > r.ms[b]; });
  order.resize(std::max<size_t>(1, order.size() / 100));
  std::map<int, std::vector<double>> by_position;
  for (size_t i : order) by_position[r.position[i]].push_back(r.ms[i]);
  std::string out;
  for (auto& [position, ms] : by_position) {
    out += fmt::format(" #{}:", position);
    for (double m : ms) out += fmt::format(" {:.1f}", m);
  }
  fmt::print("    slowest {} by position in burst (ms):{}\n", order.size(), out);
}

// The N slowest claims of a row, each with where its time went: waiting for a free sender
// (open loop), then the server's spans by their start from the moment the request was sent, and
// how many claims were in flight when it was sent.
void PrintSlowest(const RunResult& r) {
  if (r.times.size() != r.ms.size() || r.times.empty()) return;
  // The server exports at least once a second; envd's spans reach it through the node, which
  // forwards them every stats interval (5 s).
  std::this_thread::sleep_for(6s);
  const auto steady_now = Clock::now();
  const auto wall_now = std::chrono::system_clock::now();
  auto unix_ns = [&](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               (wall_now + (t - steady_now)).time_since_epoch())
        .count();
  };
  std::vector<size_t> order(r.ms.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.ms[a] > r.ms[b]; });
  order.resize(std::min<size_t>(order.size(), static_cast<size_t>(trace_slowest)));
  for (size_t i : order) {
    const ClaimTimes& c = r.times[i];
    int in_flight = 0;
    for (const ClaimTimes& o : r.times) {
      if (o.sent <= c.sent && o.done > c.sent) ++in_flight;
    }
    fmt::print("    claim #{} {:.2f} ms: waited {:.2f} for a sender, {} in flight when sent\n",
               r.position[i], r.ms[i], Ms(c.sent - c.scheduled), in_flight);
    const int64_t sent_ns = unix_ns(c.sent);
    std::vector<RecordedSpan> spans = span_recorder->Trace(c.trace_id);
    if (spans.empty()) fmt::print("      (no spans received)\n");
    std::map<std::string, int> depth;
    for (const RecordedSpan& s : spans) {
      auto parent = depth.find(s.parent_span_id);
      int d = parent == depth.end() ? 0 : parent->second + 1;
      depth[s.span_id] = d;
      fmt::print("      {:>7.2f} +{:<7.2f} {}{}{}\n", (s.start_unix_ns - sent_ns) / 1e6,
                 (s.end_unix_ns - s.start_unix_ns) / 1e6, std::string(2 * d, ' '), s.name,
                 s.service == "warren-envd" ? " (envd)" : "");
    }
    fmt::print("      {:>7.2f}  answer read by the bench\n", Ms(c.done - c.sent));
  }
}

void PrintRow(const std::string& label, const RunResult& r) {
  Summary s = Summarize(r.ms);
  double rate = r.busy_seconds > 0 ? s.n / r.busy_seconds : 0;
  fmt::print("{:<34} {:>6} {:>8.2f} {:>8.2f} {:>8.2f} {:>9.0f}", label, s.n, s.p50, s.p99, s.max,
             rate);
  if (r.errors > 0) fmt::print("   ({} errors; first: {})", r.errors, r.first_error);
  fmt::print("\n");
  if (print_tail && r.position.size() == r.ms.size() && !r.ms.empty()) PrintTail(r);
  if (trace_slowest > 0) PrintSlowest(r);
}

// The claim path with tracing off and on in the same run: rounds alternate (off, on, off, on,
// ...) so drift in the machine's load falls on both; each round is a fresh server (tracing is
// chosen at start) with a full pool, then `claims` claims at c=1, killed after each burst (the
// claim path alone). With tracing on every claim is traced (sampling 1.0): the request span,
// its steps, and the exporter posting them to a receiver in this process.
int RunTracingAb(const Options& o, int rounds) {
  SpanCounter receiver;
  RunResult off, on;
  for (int round = 0; round < 2 * rounds; ++round) {
    bool tracing = round % 2 == 1;
    WarrenServer server;
    server.EnableNodeAgent();
    std::string key = pool_testing::BootstrapAdminKey(server);
    std::vector<std::string> args;
    if (tracing) args = {"--tracing-endpoint", receiver.endpoint()};
    server.Start(args);
    E2bClient e2b(server, key);
    const std::string set = "bench-pool";
    server.Apply(pool_testing::PoolManifest(set, o.pool));
    CHECK_MSG(Eventually([&] { return AvailableReplicas(server, set) >= o.pool; }, 900s),
              "the pool never filled:\n"
                  << server.log());
    RunResult r = RunClaims(server, e2b, set, o.pool, o.claims, 1, false);
    PrintRow(fmt::format("round {} tracing {}", round / 2 + 1, tracing ? "on" : "off"), r);
    RunResult& all = tracing ? on : off;
    all.ms.insert(all.ms.end(), r.ms.begin(), r.ms.end());
    all.busy_seconds += r.busy_seconds;
    all.errors += r.errors;
    if (all.first_error.empty()) all.first_error = r.first_error;
  }
  PrintRow("all rounds, tracing off", off);
  PrintRow("all rounds, tracing on", on);
  Summary a = Summarize(off.ms), b = Summarize(on.ms);
  double rate_off = off.busy_seconds > 0 ? a.n / off.busy_seconds : 0;
  double rate_on = on.busy_seconds > 0 ? b.n / on.busy_seconds : 0;
  auto pct = [](double base, double with) { return base > 0 ? 100 * (with - base) / base : 0; };
  fmt::print(
      "tracing overhead: p50 {:+.1f} %, p99 {:+.1f} %, claims/s {:+.1f} %; spans received {}\n",
      pct(a.p50, b.p50), pct(a.p99, b.p99), pct(rate_off, rate_on), receiver.spans());
  return 0;
}

std::vector<int> ParseList(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoi(item));
  return out;
}

int Main(int argc, char** argv) {
  Options o;
  int tracing_rounds = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      CHECK_MSG(i + 1 < argc, a << " needs a value");
      return argv[++i];
    };
    if (a == "--pool") {
      o.pool = std::stoi(value());
    } else if (a == "--claims") {
      o.claims = std::stoi(value());
    } else if (a == "--concurrency") {
      o.concurrency = ParseList(value());
    } else if (a == "--cold") {
      o.cold = std::stoi(value());
    } else if (a == "--rates") {
      o.rates = ParseList(value());
    } else if (a == "--idle-seconds") {
      o.idle_seconds = std::stoi(value());
    } else if (a == "--hibernated") {
      o.hibernated = std::stoi(value());
    } else if (a == "--tail") {
      print_tail = true;
    } else if (a == "--trace-slowest") {
      trace_slowest = std::stoi(value());
    } else if (a == "--tracing") {
      tracing_rounds = std::stoi(value());
    } else if (a == "--smoke") {
      o.pool = 4;
      o.claims = 8;
      o.concurrency = {1, 2};
      o.cold = 2;
      o.idle_seconds = 1;
      o.rates = {100};
      o.hibernated = 2;
    } else {
      fmt::print(stderr, "unknown flag {}\n", a);
      return 2;
    }
  }
  if (geteuid() != 0) {
    fmt::print("claim_bench needs root (real sandboxes); skipped\n");
    return 77;
  }

  if (tracing_rounds > 0) {
    fmt::print("claim bench, tracing off vs on: pool of {}, {} claims at c=1 per round\n", o.pool,
               o.claims);
    fmt::print("{:<34} {:>6} {:>8} {:>8} {:>8} {:>9}\n", "", "n", "p50 ms", "p99 ms", "max ms",
               "per s");
    return RunTracingAb(o, tracing_rounds);
  }
  std::optional<SpanRecorder> recorder;
  std::vector<std::string> server_args;
  if (trace_slowest > 0) {
    // Only the bench's claims are traced (their traceparent is sampled; nothing else is).
    span_recorder = &recorder.emplace();
    server_args = {"--tracing-endpoint", recorder->endpoint(), "--tracing-sampling-ratio", "0"};
  }
  WarrenServer server;
  server.EnableNodeAgent();
  std::string key = pool_testing::BootstrapAdminKey(server);
  server.Start(server_args);
  E2bClient e2b(server, key);

  const std::string set = "bench-pool";
  server.Apply(pool_testing::PoolManifest(set, o.pool));
  auto fill_start = Clock::now();
  CHECK_MSG(Eventually([&] { return AvailableReplicas(server, set) >= o.pool; }, 900s),
            "the pool never filled:\n"
                << server.log());
  double fill_s = std::chrono::duration<double>(Clock::now() - fill_start).count();

  fmt::print(
      "claim bench: pool of {} (filled in {:.1f} s, {:.1f} sandboxes/s), {} claims per "
      "concurrency, {} cold creates\n",
      o.pool, fill_s, o.pool / fill_s, o.claims, o.cold);
  fmt::print("{:<34} {:>6} {:>8} {:>8} {:>8} {:>9}\n", "", "n", "p50 ms", "p99 ms", "max ms",
             "per s");
  RunResult cold = RunCold(e2b, o.cold);
  PrintRow("cold create (reference, c=1)", cold);
  PrintRow("pool claim c=1, refills held, one burst", RunHeldClaims(server, e2b, set, o.pool));
  for (int c : o.concurrency) {
    RunResult alone = RunClaims(server, e2b, set, o.pool, o.claims, c, false);
    PrintRow(fmt::format("pool claim c={}, kills after burst", c), alone);
    RunResult busy = RunClaims(server, e2b, set, o.pool, o.claims, c, true);
    PrintRow(fmt::format("pool claim c={}, kills during burst", c), busy);
  }
  for (double rate : o.rates) {
    RunResult alone = RunClaims(server, e2b, set, o.pool, o.claims, 8, false, rate);
    PrintRow(fmt::format("pool claim {:.0f}/s open loop, kills after", rate), alone);
    RunResult busy = RunClaims(server, e2b, set, o.pool, o.claims, 8, true, rate);
    PrintRow(fmt::format("pool claim {:.0f}/s open loop, kills during", rate), busy);
  }
  if (o.hibernated > 0) {
    // Beside the running pool's c=1 claims above: the same claim, waking its member first.
    RunResult thawed =
        RunWokenClaims(server, e2b, "bench-idle-memory", o.hibernated, "{idleSeconds: 1}");
    PrintRow("claim waking a paused member (thaw)", thawed);
    RunResult booted = RunWokenClaims(server, e2b, "bench-idle-files", o.hibernated,
                                      "{type: Stop, idleSeconds: 1}");
    PrintRow("claim waking a stopped member (boot)", booted);
  }
  if (o.idle_seconds > 0) {
    CHECK(Eventually([&] { return AvailableReplicas(server, set) >= o.pool; }, 600s));
    MeasureIdlePool(server.data_dir(), static_cast<size_t>(o.pool), o.idle_seconds);
  }
  // Read after a run for what the server did during the rows (its warnings, its timings).
  if (const char* path = getenv("CLAIM_BENCH_LOG")) {
    std::ofstream out(path);
    out << server.log();
    if (!out) fmt::print(stderr, "claim bench: could not write the server's log to {}\n", path);
  }
  auto [p50, p99] = ServerSideQuantiles(server);
  fmt::print(
      "server side (warren_claim_duration_seconds, all claims): p50 {:.2f} ms, p99 {:.2f} "
      "ms\n",
      p50, p99);
  // ~WarrenServer deletes every sandbox before stopping the server.
  return 0;
}

}  // namespace
}  // namespace warren::bench

int main(int argc, char** argv) { return warren::bench::Main(argc, argv); }
