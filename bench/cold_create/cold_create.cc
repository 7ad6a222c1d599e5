// Cold create → a process accepting TCP connections inside the sandbox, measured for the native
// runtime and for `runc run` of the same rootfs with an equivalent config, in the same run
// (interleaved, so both see the same machine load). Also idle memory per sandbox and
// pause/resume latency of idle sandboxes, each beside runc. See README.md.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/scope_guard.h"
#include "common/stop_signal.h"
#include "node/sandbox_storage.h"
#include "os/cgroup.h"
#include "os/netns.h"
#include "runc_driver.h"
#include "runtime/native/native_runtime.h"
#include "runtime/testing/busybox_rootfs.h"
#include "stats.h"

namespace warren::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint16_t kPort = 8080;
constexpr int kSkip = 77;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Args {
  int n = 200;
  int userns_n = 50;
  int storage_n = 50;
  int runc_n = 200;
  int idle = 100;
  int warmup = 3;
};

void AddFlags(CLI::App& app, Args& a) {
  app.add_option("--n", a.n, "native create+start+ready cycles")->check(CLI::Range(1, 1000000));
  app.add_option("--userns-n", a.userns_n, "cycles with a user namespace")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--storage-n", a.storage_n,
                 "cycles with the writable layer in an ephemeral-storage subvolume (as the node "
                 "agent makes it)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--runc-n", a.runc_n, "runc run + delete cycles (the reference)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--idle", a.idle, "idle sandboxes for memory and pause/resume (0: skip)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--warmup", a.warmup, "untimed cycles first")->check(CLI::Range(0, 1000000));
}

std::vector<std::string> Server() {
  return {"/bin/httpd", "-f", "-p", fmt::format("127.0.0.1:{}", kPort), "-h", "/"};
}

// Dials until something accepts (each try ~20 µs to create the socket in the netns).
Status WaitReady(const std::function<Result<base::UniqueFd>()>& dial) {
  auto deadline = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    auto fd = dial();
    if (fd.ok()) return Status::Ok();
    if (fd.status().code() != StatusCode::kUnavailable) return fd.status();
    if (Clock::now() > deadline) return DeadlineExceededError("server never became ready");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

int Main(int argc, char** argv) {
  Args args;
  CLI::App app{"cold_create: cold create -> TCP ready, native runtime beside runc (needs root)"};
  AddFlags(app, args);
  CLI11_PARSE(app, argc, argv);
  if (geteuid() != 0) {
    fmt::print("cold_create: needs root (namespaces, cgroups, mounts); skipped\n");
    return kSkip;
  }
  // Ctrl-C (or a SIGTERM) returns from here instead of killing the process, so `cleanup` and
  // the runtime's destructor remove the sandboxes, cgroups and idmapped layer views it made.
  InstallStopSignals();
  auto stopped = [] {
    fmt::print(stderr, "cold_create: stopped by a signal; removing what it made\n");
    return StoppedExitCode();
  };
  runtime::testing::TempDir work("warren-bench", "/var/tmp");
  fmt::print(stderr, "cold_create: work dir {}, cgroups warren-bench-{}\n", work.path(), getpid());
  std::string layer = work.path() + "/layer";
  if (Status st = runtime::testing::MakeBusyboxLayer(layer); !st.ok()) {
    fmt::print(stderr, "layer: {}\n", st.ToString());
    return 1;
  }
  runtime::native::NativeRuntimeOptions opts;
  opts.state_dir = work.path() + "/state";
  opts.cgroup_parent = fmt::format("warren-bench-{}", getpid());
  opts.trace_launches = true;
  auto made = runtime::native::NativeRuntime::Create(opts);
  if (!made.ok()) {
    fmt::print(stderr, "runtime: {}\n", made.status().ToString());
    return 1;
  }
  auto& rt = **made;
  // The node agent's sandbox storage (a btrfs image with quota groups), for --storage-n.
  std::unique_ptr<node::SandboxStorage> storage;
  if (args.storage_n > 0) {
    node::StorageOptions so;
    so.image_bytes = int64_t{4} << 30;
    storage = node::SandboxStorage::Open(work.path() + "/node", so);
    if (!storage->enforced()) {
      fmt::print(stderr, "ephemeral-storage cycles skipped: {}\n", storage->reason());
      args.storage_n = 0;
    }
  }
  runtime::Resources res{1000, 256 << 20, 512};
  auto spec = [&](const std::string& id, bool userns = false,
                  const std::string& writable_dir = "") {
    runtime::SandboxSpec s;
    s.user_namespace = userns;
    s.id = id;
    s.layers = {layer};
    s.writable_dir = writable_dir.empty() ? work.path() + "/rw-" + id : writable_dir;
    s.command = Server();
    s.env = {"PATH=/bin"};
    s.resources = res;
    return s;
  };
  bool with_runc = args.runc_n > 0 && RuncDriver::Available();
  RuncDriver runc(work.path(), layer, res);
  std::vector<std::string> runc_live;  // containers to delete if we bail out
  // Whatever happens below, nothing of this run stays on the machine.
  auto cleanup = base::ScopeExit([&] {
    for (const runtime::SandboxInfo& info : rt.List()) rt.Destroy(info.id).IgnoreError();
    for (const std::string& id : runc_live) runc.Delete(id).IgnoreError();
    auto h = os::CgroupHierarchies::Detect();
    if (h.ok()) {
      for (const std::string& d : h->DirsFor(opts.cgroup_parent)) rmdir(d.c_str());
    }
    runc.RemoveCgroupParent();
    if (storage) storage->Close(/*sandboxes_remain=*/false);
  });

  std::vector<double> native_ready, native_create, native_start, native_destroy, userns_ready;
  std::vector<double> storage_ready, storage_destroy;
  std::vector<double> runc_ready, runc_destroy;
  using runtime::native::LaunchPhase;
  constexpr int kPhases = static_cast<int>(LaunchPhase::kCount);
  std::vector<std::vector<double>> phases(kPhases);
  auto native_once = [&](const std::string& id, bool record, bool userns = false) -> Status {
    auto t0 = Clock::now();
    RETURN_IF_ERROR(rt.Create(spec(id, userns)));
    auto t1 = Clock::now();
    RETURN_IF_ERROR(rt.Start(id));
    auto t2 = Clock::now();
    if (record && !userns) {
      auto trace = rt.LaunchTraceOf(id);
      if (trace.ok()) {
        // Parent and child phases interleave (the child may run before clone3 returns in
        // the parent), so each phase is measured from the latest earlier timestamp.
        for (int p = 1; p < kPhases; ++p) {
          uint64_t prev = 0;
          for (int q = 0; q < p; ++q) prev = std::max(prev, trace->ns[q]);
          if (trace->ns[p] != 0 && prev != 0) {
            double d = trace->ns[p] > prev ? (trace->ns[p] - prev) / 1e6 : 0.0;
            phases[static_cast<size_t>(p)].push_back(d);
          }
        }
      }
    }
    RETURN_IF_ERROR(WaitReady([&] { return rt.Dial(id, kPort, std::chrono::seconds(1)); }));
    auto t3 = Clock::now();
    RETURN_IF_ERROR(rt.Destroy(id));
    auto t4 = Clock::now();
    if (record && userns) userns_ready.push_back(Ms(t3 - t0));
    if (record && !userns) {
      native_create.push_back(Ms(t1 - t0));
      native_start.push_back(Ms(t2 - t1));
      native_ready.push_back(Ms(t3 - t0));
      native_destroy.push_back(Ms(t4 - t3));
    }
    return Status::Ok();
  };
  // As the node agent does it: the sandbox's directory is a subvolume with its limit, the
  // writable layer inside; destroy removes the subvolume.
  auto storage_once = [&](const std::string& id) -> Status {
    const std::string dir = storage->sandboxes_dir() + "/" + id;
    auto t0 = Clock::now();
    RETURN_IF_ERROR(storage->MakeSandboxDir(dir, int64_t{1} << 30));
    RETURN_IF_ERROR(rt.Create(spec(id, false, dir + "/rootfs")));
    RETURN_IF_ERROR(rt.Start(id));
    RETURN_IF_ERROR(WaitReady([&] { return rt.Dial(id, kPort, std::chrono::seconds(1)); }));
    auto t1 = Clock::now();
    RETURN_IF_ERROR(rt.Destroy(id));
    RETURN_IF_ERROR(storage->RemoveSandboxDir(dir));
    auto t2 = Clock::now();
    storage_ready.push_back(Ms(t1 - t0));
    storage_destroy.push_back(Ms(t2 - t1));
    return Status::Ok();
  };
  auto runc_once = [&](const std::string& id, bool record) -> Status {
    auto t0 = Clock::now();
    runc_live.push_back(id);
    ASSIGN_OR_RETURN(int pid, runc.Run(id, Server()));
    RETURN_IF_ERROR(
        WaitReady([&] { return os::DialInNetnsOfPid(pid, kPort, std::chrono::seconds(1)); }));
    auto t1 = Clock::now();
    RETURN_IF_ERROR(runc.Delete(id));
    runc_live.pop_back();
    auto t2 = Clock::now();
    if (record) {
      runc_ready.push_back(Ms(t1 - t0));
      runc_destroy.push_back(Ms(t2 - t1));
    }
    return Status::Ok();
  };

  for (int i = 0; i < args.warmup; ++i) {
    if (StopRequested()) return stopped();
    // One warm-up with a user namespace makes the idmapped layer (kept for the runtime's life).
    if (Status st = native_once(fmt::format("warm-{}", i), false, i == 0); !st.ok()) {
      if (StopRequested()) return stopped();  // an interrupted step
      fmt::print(stderr, "native warmup: {}\n", st.ToString());
      return 1;
    }
    if (with_runc) {
      if (Status st = runc_once(fmt::format("rwarm-{}", i), false); !st.ok()) {
        fmt::print(stderr, "runc warmup: {} (runc comparison disabled)\n", st.ToString());
        with_runc = false;
      }
    }
  }
  int rounds = std::max({args.n, args.storage_n, with_runc ? args.runc_n : 0});
  for (int i = 0; i < rounds; ++i) {
    if (StopRequested()) return stopped();
    if (i < args.n) {
      if (Status st = native_once(fmt::format("cc-{}", i), true); !st.ok()) {
        if (StopRequested()) return stopped();  // an interrupted step
        fmt::print(stderr, "native #{}: {}\n", i, st.ToString());
        return 1;
      }
    }
    if (i < args.storage_n) {
      if (Status st = storage_once(fmt::format("st-{}", i)); !st.ok()) {
        if (StopRequested()) return stopped();  // an interrupted step
        fmt::print(stderr, "native ephemeral-storage #{}: {}\n", i, st.ToString());
        return 1;
      }
    }
    if (i < args.userns_n) {
      if (Status st = native_once(fmt::format("uns-{}", i), true, true); !st.ok()) {
        if (StopRequested()) return stopped();  // an interrupted step
        fmt::print(stderr, "native userns #{}: {}\n", i, st.ToString());
        return 1;
      }
    }
    if (with_runc && i < args.runc_n) {
      if (Status st = runc_once(fmt::format("rc-{}", i), true); !st.ok()) {
        if (StopRequested()) return stopped();  // an interrupted step
        fmt::print(stderr, "runc #{}: {}\n", i, st.ToString());
        return 1;
      }
    }
  }

  // Idle density and pause/resume: M idle servers of each kind.
  std::vector<double> pause_ms, resume_ms, runc_pause_ms, runc_resume_ms;
  double native_memcg = 0, native_avail = 0, runc_memcg = 0, runc_avail = 0;
  auto settle = [] { std::this_thread::sleep_for(std::chrono::milliseconds(500)); };
  if (args.idle > 0) {
    settle();
    uint64_t before = MemAvailableBytes();
    std::vector<std::string> ids;
    for (int i = 0; i < args.idle; ++i) {
      if (StopRequested()) return stopped();
      std::string id = fmt::format("idle-{}", i);
      Status st = rt.Create(spec(id));
      if (st.ok()) st = rt.Start(id);
      if (st.ok()) {
        st = WaitReady([&] { return rt.Dial(id, kPort, std::chrono::seconds(1)); });
      }
      if (!st.ok()) {
        if (StopRequested()) return stopped();  // an interrupted step
        fmt::print(stderr, "idle #{}: {}\n", i, st.ToString());
        return 1;
      }
      ids.push_back(id);
    }
    settle();
    uint64_t after = MemAvailableBytes();
    uint64_t memcg = 0;
    for (const std::string& id : ids) memcg += rt.Stats(id).value_or({}).memory_bytes;
    native_memcg = static_cast<double>(memcg) / ids.size();
    native_avail = (static_cast<double>(before) - static_cast<double>(after)) / ids.size();
    for (const std::string& id : ids) {
      auto t0 = Clock::now();
      Status p = rt.Pause(id);
      auto t1 = Clock::now();
      Status r = rt.Resume(id);
      auto t2 = Clock::now();
      if (!p.ok() || !r.ok()) {
        fmt::print(stderr, "pause/resume {}: {} {}\n", id, p.ToString(), r.ToString());
        return 1;
      }
      pause_ms.push_back(Ms(t1 - t0));
      resume_ms.push_back(Ms(t2 - t1));
    }
    for (const std::string& id : ids) {
      if (Status st = rt.Destroy(id); !st.ok()) fmt::print(stderr, "{}\n", st.ToString());
    }

    if (with_runc) {
      settle();
      before = MemAvailableBytes();
      std::vector<std::string> rids;
      for (int i = 0; i < args.idle; ++i) {
        if (StopRequested()) return stopped();
        std::string id = fmt::format("ridle-{}", i);
        runc_live.push_back(id);
        auto pid = runc.Run(id, Server());
        Status st = pid.status();
        if (st.ok()) {
          st =
              WaitReady([&] { return os::DialInNetnsOfPid(*pid, kPort, std::chrono::seconds(1)); });
        }
        if (!st.ok()) {
          if (StopRequested()) return stopped();  // an interrupted step
          fmt::print(stderr, "runc idle #{}: {}\n", i, st.ToString());
          return 1;
        }
        rids.push_back(id);
      }
      settle();
      after = MemAvailableBytes();
      memcg = 0;
      for (const std::string& id : rids) memcg += runc.MemoryUsage(id).value_or(0);
      runc_memcg = static_cast<double>(memcg) / rids.size();
      runc_avail = (static_cast<double>(before) - static_cast<double>(after)) / rids.size();
      for (const std::string& id : rids) {
        auto t0 = Clock::now();
        Status p = runc.Pause(id);
        auto t1 = Clock::now();
        Status r = runc.Resume(id);
        auto t2 = Clock::now();
        if (p.ok() && r.ok()) {
          runc_pause_ms.push_back(Ms(t1 - t0));
          runc_resume_ms.push_back(Ms(t2 - t1));
        }
      }
      for (const std::string& id : rids) runc.Delete(id).IgnoreError();
      runc_live.clear();
    }
  }

  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  fmt::print(
      "\ncold create -> TCP ready inside the sandbox (busybox httpd, readiness by dialing "
      "into its netns)\n");
  fmt::print("load average {:.2f} {:.2f} {:.2f}, {} cores\n", load[0], load[1], load[2],
             std::thread::hardware_concurrency());
  fmt::print("  {:<34} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "ms", "n", "min", "p50", "p90",
             "p99", "max");
  Summary nr = Summarize(native_ready);
  fmt::print("{}\n", FormatRow("warren native: create+start+ready", nr));
  fmt::print("{}\n", FormatRow("  of which Create()", Summarize(native_create)));
  fmt::print("{}\n", FormatRow("  of which Start() (to exec)", Summarize(native_start)));
  static const char* const kPhaseNames[] = {"",
                                            "  clone3 (parent)",
                                            "  child first runs",
                                            "  id maps written",
                                            "  child wakes up",
                                            "  joins its cgroups + cgroup ns",
                                            "  hostname + lo",
                                            "  overlay",
                                            "  /proc + /sys",
                                            "  /dev",
                                            "  binds + pivot_root",
                                            "  rlimits+caps+user",
                                            "  nnp+seccomp",
                                            "  execve seen by parent"};
  for (int p = 1; p < kPhases; ++p) {
    fmt::print("{}\n", FormatRow(kPhaseNames[p], Summarize(phases[static_cast<size_t>(p)])));
  }
  fmt::print("{}\n", FormatRow("warren native: destroy", Summarize(native_destroy)));
  if (!userns_ready.empty()) {
    fmt::print("{}\n", FormatRow("warren native + userns: to ready", Summarize(userns_ready)));
  }
  if (!storage_ready.empty()) {
    fmt::print("{}\n", FormatRow("warren native + storage limit: ready", Summarize(storage_ready)));
    fmt::print("{}\n", FormatRow("  destroy + subvolume removal", Summarize(storage_destroy)));
  }
  if (with_runc) {
    Summary rr = Summarize(runc_ready);
    fmt::print("{}\n", FormatRow("runc run --detach: to ready", rr));
    fmt::print("{}\n", FormatRow("runc delete --force", Summarize(runc_destroy)));
    fmt::print("  speedup at p50: {:.1f}x   at p99: {:.1f}x\n", rr.p50 / nr.p50, rr.p99 / nr.p99);
  } else {
    fmt::print("  (runc not available: no reference)\n");
  }
  if (args.idle > 0) {
    fmt::print("\nidle memory per sandbox (M={} idle httpd sandboxes)\n", args.idle);
    fmt::print("  warren native: memcg {:.0f} KiB, MemAvailable drop {:.0f} KiB\n",
               native_memcg / 1024, native_avail / 1024);
    if (with_runc) {
      fmt::print("  runc:          memcg {:.0f} KiB, MemAvailable drop {:.0f} KiB\n",
                 runc_memcg / 1024, runc_avail / 1024);
    }
    fmt::print("\npause / resume of an idle sandbox\n");
    fmt::print("{}\n", FormatRow("warren native: pause", Summarize(pause_ms)));
    fmt::print("{}\n", FormatRow("warren native: resume", Summarize(resume_ms)));
    if (with_runc) {
      fmt::print("{}\n", FormatRow("runc pause", Summarize(runc_pause_ms)));
      fmt::print("{}\n", FormatRow("runc resume", Summarize(runc_resume_ms)));
    }
  }
  return 0;
}

}  // namespace
}  // namespace warren::bench

int main(int argc, char** argv) { return warren::bench::Main(argc, argv); }
