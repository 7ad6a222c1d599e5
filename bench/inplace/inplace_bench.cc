// inplace_bench [--n N]: the time from a changed image to a Ready sandbox running it, through an
// in-process node agent (as `warren server` runs it), three ways on the same host in the same
// run, round by round: in place (Sandbox template image base → busybox: the same sandbox, its
// processes restarted on the new image, node/inplace_update.cc); made again by the node for a
// change that does not qualify (a new command: destroy and create under the same id and
// object); and what a user without either does — delete the Sandbox, wait until it is gone,
// create it on the new image and wait until it is Ready.

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "api/yaml_codec.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "common/bench_node.h"
#include "common/stop_signal.h"

namespace {

using namespace warren;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string Container(const std::string& image, const std::string& command) {
  return fmt::format(
      R"({{"name":"main","image":"{}","command":{},"resources":{{"limits":{{"memory":"64Mi"}}}}}})",
      image, command);
}
constexpr const char* kSleep = R"(["sleep","1000000"])";

Status Create(store::Store& store, const std::string& name, const std::string& image) {
  auto doc = api::ParseJson(fmt::format(
      R"({{"apiVersion":"agents.kruise.io/v1alpha1","kind":"Sandbox",
          "metadata":{{"name":"{}","namespace":"default"}},
          "spec":{{"template":{{"spec":{{"containers":[{}]}}}}}}}})",
      name, Container(image, kSleep)));
  ASSIGN_OR_RETURN(api::Object obj, api::ObjectFromJson(*doc));
  return store.Create(obj).status();
}

Status PatchTemplate(store::Store& store, const std::string& name, const std::string& container) {
  auto patch = api::ParseJson(
      fmt::format(R"({{"spec":{{"template":{{"spec":{{"containers":[{}]}}}}}}}})", container));
  return store.Patch(api::SandboxKind(), "default", name, *patch).status();
}

// Polls the object every 2 ms until `done` holds; the time it took, or a negative one.
double WaitMs(store::Store& store, const std::string& name, Clock::time_point t0,
              const std::function<bool(const Result<api::Object>&)>& done) {
  while (Clock::now() - t0 < 120s && !bench::StopRequested()) {
    if (done(store.Get(api::SandboxKind(), "default", name))) {
      return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    }
    std::this_thread::sleep_for(2ms);
  }
  return -1;
}

bool Ready(const Result<api::Object>& o) {
  if (!o.ok()) return false;
  auto st = api::DecodeStatus<api::SandboxStatus>(*o);
  return st.ok() && st->phase == "Running" && api::IsConditionTrue(st->conditions, "Ready");
}

std::string UpdateReason(const Result<api::Object>& o) {
  if (!o.ok()) return "";
  auto st = api::DecodeStatus<api::SandboxStatus>(*o);
  if (!st.ok()) return "";
  const api::Condition* c = api::FindCondition(st->conditions, "InplaceUpdate");
  return c ? c->reason : "";
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  bench::InstallStopSignals();
  int n = 20;
  CLI::App app{"inplace_bench: an image change in place, beside making the sandbox again"};
  app.add_option("--n", n, "rounds (one sandbox each)")->check(CLI::Range(1, 10000));
  CLI11_PARSE(app, argc, argv);
  if (geteuid() != 0) {
    fmt::print("inplace_bench needs root; skipped\n");
    return 77;
  }
  auto started = bench::BenchNode::Start(WARREN_ENVD_BIN, "busybox");
  if (!started.ok()) {
    fmt::print(stderr, "{}\n", started.status().ToString());
    return 1;
  }
  bench::BenchNode& bn = **started;
  store::Store& store = bn.store();
  for (int i = 0; i < 600 && !bn.images().Resolve("base").ok(); ++i) {
    std::this_thread::sleep_for(100ms);
  }
  fmt::print("inplace_bench: {} rounds, base → busybox, {} cores, load {}\n", n,
             std::thread::hardware_concurrency(),
             base::TrimSpace(base::ReadSmallFile("/proc/loadavg").value_or("?")));
  std::vector<double> inplace, recreate, delete_create;
  int rc = 0;
  for (int i = 0; i < n && rc == 0 && !bench::StopRequested(); ++i) {
    const std::string name = fmt::format("bench-{}", i);
    if (!Create(store, name, "base").ok() ||
        WaitMs(store, name, Clock::now(), [](const auto& o) { return Ready(o); }) < 0) {
      rc = 1;
      break;
    }
    // In place: base → busybox.
    auto t0 = Clock::now();
    if (!PatchTemplate(store, name, Container("busybox", kSleep)).ok()) rc = 1;
    double ms = WaitMs(store, name, t0,
                       [](const auto& o) { return UpdateReason(o) == "Succeeded" && Ready(o); });
    if (ms < 0) rc = 1;
    inplace.push_back(ms);
    // Made again by the node: a new command.
    t0 = Clock::now();
    if (!PatchTemplate(store, name, Container("busybox", R"(["sleep","999999"])")).ok()) rc = 1;
    ms = WaitMs(store, name, t0,
                [](const auto& o) { return UpdateReason(o) == "Recreated" && Ready(o); });
    if (ms < 0) rc = 1;
    recreate.push_back(ms);
    // Without either: delete, wait until gone, create on the new image, wait until Ready.
    t0 = Clock::now();
    (void)store.Delete(api::SandboxKind(), "default", name);
    WaitMs(store, name, t0, [](const auto& o) { return !o.ok(); });
    if (!Create(store, name, "base").ok()) rc = 1;
    ms = WaitMs(store, name, t0, [](const auto& o) { return Ready(o); });
    if (ms < 0) rc = 1;
    delete_create.push_back(ms);
    (void)store.Delete(api::SandboxKind(), "default", name);
    WaitMs(store, name, Clock::now(), [](const auto& o) { return !o.ok(); });
  }
  if (rc != 0) {
    fmt::print(stderr, "inplace_bench: a round did not finish (see the agent's log)\n");
  } else {
    auto row = [&](const char* what, const std::vector<double>& v) {
      fmt::print("  {:<44} p50 {:7.1f} ms  p99 {:7.1f} ms\n", what, Percentile(v, 0.5),
                 Percentile(v, 0.99));
    };
    row("in place (image change, same sandbox)", inplace);
    row("made again by the node (command change)", recreate);
    row("reference: delete, then create on the image", delete_create);
  }
  bn.agent().Stop();
  if (bench::StopRequested()) return bench::StoppedExitCode();
  return rc;
}
