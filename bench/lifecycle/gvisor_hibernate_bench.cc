// gvisor_hibernate_bench [--n N] [--mb MB]: what Warren's hibernate and restore of a gVisor
// sandbox cost (GvisorRuntime::Hibernate, then Resume to the sandbox's process running again)
// beside raw runsc on an equivalent bundle in the same run, round by round:
//   hibernate:  Warren: runsc checkpoint, the shim reaped, runsc delete, root unmounted, record
//               written.       runsc: `runsc checkpoint` then `runsc delete`.
//   restore:    Warren: root mounted, a new shim, `runsc restore --detach`, the image removed.
//               runsc: `runsc restore --detach` alone.
//   → running:  from the restore's start until the restored process writes its next tick.
// The workload holds `--mb` MB of random bytes in a tmpfs (the Sentry's memory, so all of it is
// in the checkpoint) and writes a tick every 50 ms to a host directory both bundles mount.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "api/json.h"
#include "base/log.h"
#include "base/small_file.h"
#include "base/testing/temp_dir.h"
#include "common/stop_signal.h"
#include "runtime/gvisor/gvisor_runtime.h"
#include "runtime/gvisor/oci_config.h"
#include "runtime/native/dir_tree.h"
#include "runtime/testing/busybox_rootfs.h"

namespace {

using namespace warren;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string Workload(int mb) {
  return fmt::format(
      "head -c {} /dev/urandom > /dev/shm/blob; i=0; "
      "while true; do i=$((i+1)); echo $i > /out/tick.new; mv /out/tick.new /out/tick; "
      "sleep 0.05; done",
      static_cast<long>(mb) << 20);
}

long ReadTick(const std::string& out_dir) {
  auto text = base::ReadSmallFile(out_dir + "/tick");
  return text.ok() ? std::atol(text->c_str()) : -1;
}

// Waits until the tick moves past `after` (the process runs); false after 60 s.
bool WaitTickPast(const std::string& out_dir, long after) {
  const auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline && !bench::StopRequested()) {
    if (ReadTick(out_dir) > after) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// Waits until the workload has filled its memory and ticks: the tick file appears only then.
bool WaitTicking(const std::string& out_dir) { return WaitTickPast(out_dir, 1); }

// Runs runsc with its stdio on `log`: a detached container inherits runsc's stdio and keeps it
// open, so no pipe of ours may be among them. The arguments are paths of our own temp dir.
Status RunRunsc(const std::vector<std::string>& args, const std::string& log) {
  std::string line = "exec";
  for (const std::string& a : args) line += " '" + a + "'";
  line += fmt::format(" </dev/null >>'{}' 2>&1", log);
  const int rc = system(line.c_str());
  if (rc == 0) return Status::Ok();
  return InternalError(fmt::format("{} failed ({}); see {}", line, rc, log));
}

struct Rows {
  std::vector<double> hibernate, restore, running;
};

void Print(const char* name, std::vector<double> xs) {
  if (xs.empty()) return;
  std::sort(xs.begin(), xs.end());
  auto pct = [&](double p) {
    size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(xs.size()) + 0.999999);
    return xs[std::min(xs.size() - 1, i == 0 ? 0 : i - 1)];
  };
  fmt::print("  {:<52} {:>4} {:>9.1f} {:>9.1f} {:>9.1f}\n", name, xs.size(), xs.front(), pct(50),
             pct(99));
}

double Median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs.empty() ? 0 : xs[xs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gvisor_hibernate_bench: Warren's gVisor hibernate/restore beside raw runsc"};
  int n = 5;
  int mb = 100;
  std::string runsc = "/usr/bin/runsc";
  std::string init = WARREN_GVISOR_INIT_BIN;
  app.add_option("--n", n, "rounds");
  app.add_option("--mb", mb, "MB the workload holds in memory");
  app.add_option("--runsc", runsc, "runsc binary");
  CLI11_PARSE(app, argc, argv);
  if (geteuid() != 0 || access(runsc.c_str(), X_OK) != 0) {
    fmt::print("gvisor_hibernate_bench: needs root and {}; skipped\n", runsc);
    return 77;
  }
  if (n < 1 || mb < 1) {
    fmt::print(stderr, "gvisor_hibernate_bench: --n and --mb must be positive\n");
    return 2;
  }
  bench::InstallStopSignals();
  base::SetLogLevel("warn");
  base::testing::TempDir dir;
  const std::string layer = dir.path() + "/layer";
  if (Status s = runtime::testing::MakeBusyboxLayer(layer); !s.ok()) {
    fmt::print(stderr, "busybox layer: {}\n", s.ToString());
    return 1;
  }

  // Warren's side.
  auto rt = runtime::gvisor::GvisorRuntime::Create(
      {.state_dir = dir.path() + "/state",
       .cgroup_parent = fmt::format("warren-gvbench-{}", getpid()),
       .runsc_path = runsc,
       .init_path = init});
  if (!rt.ok()) {
    fmt::print(stderr, "gvisor runtime: {}\n", rt.status().ToString());
    return 1;
  }
  const std::string warren_out = dir.path() + "/warren-out";
  mkdir(warren_out.c_str(), 0777);
  runtime::SandboxSpec spec;
  spec.id = "hib";
  spec.layers = {layer};
  spec.writable_dir = dir.path() + "/rw";
  spec.command = {"/bin/sh", "-c", Workload(mb)};
  spec.env = {"PATH=/bin"};
  spec.log_path = dir.path() + "/hib.log";
  spec.resources.memory_bytes = static_cast<int64_t>(mb + 512) << 20;
  spec.mounts.push_back(runtime::BindMount{warren_out, "/out", false});

  // The reference: the same config.json with the workload as pid 1 (no init, no shim), on a
  // plain copy of the layer, under its own runsc root.
  const std::string bundle = dir.path() + "/bundle";
  const std::string raw_out = dir.path() + "/raw-out";
  const std::string raw_root = dir.path() + "/raw-root";
  const std::string raw_image = dir.path() + "/raw-image";
  mkdir(bundle.c_str(), 0700);
  mkdir(raw_out.c_str(), 0777);
  mkdir(raw_root.c_str(), 0700);
  if (system(fmt::format("cp -a {} {}/rootfs", layer, bundle).c_str()) != 0) return 1;
  runtime::SandboxSpec raw_spec = spec;
  raw_spec.mounts = {runtime::BindMount{raw_out, "/out", false}};
  auto config = api::ParseJson(runtime::gvisor::BuildOciConfig(
      raw_spec, {.rootfs = bundle + "/rootfs",
                 .init_path = init,
                 .cgroups_path = fmt::format("/warren-gvbench-raw-{}", getpid()),
                 .bind_sources = {raw_out}}));
  if (!config.ok()) return 1;
  (*config)["process"]["args"] = spec.command;
  if (Status s = base::WriteFileAtomically(bundle + "/config.json", api::DumpJson(*config));
      !s.ok()) {
    return 1;
  }
  const std::vector<std::string> raw = {runsc, "--root=" + raw_root, "--platform=ptrace",
                                        "--network=none"};
  auto raw_cmd = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = raw;
    argv.insert(argv.end(), args.begin(), args.end());
    return RunRunsc(argv, dir.path() + "/raw-runsc.log");
  };

  Rows warren, reference;
  Status failed = Status::Ok();
  for (int round = 0; round < n && failed.ok() && !bench::StopRequested(); ++round) {
    // Warren.
    unlink((warren_out + "/tick").c_str());
    if (failed = (*rt)->Create(spec); !failed.ok()) break;
    if (failed = (*rt)->Start("hib"); !failed.ok()) break;
    if (!WaitTicking(warren_out)) {
      failed = InternalError("warren's sandbox never ticked");
      break;
    }
    auto t0 = Clock::now();
    if (failed = (*rt)->Hibernate("hib"); !failed.ok()) break;
    warren.hibernate.push_back(Ms(t0));
    const long before = ReadTick(warren_out);
    t0 = Clock::now();
    if (failed = (*rt)->Resume("hib"); !failed.ok()) break;
    warren.restore.push_back(Ms(t0));
    if (!WaitTickPast(warren_out, before)) {
      failed = InternalError("warren's restored sandbox never ticked");
      break;
    }
    warren.running.push_back(Ms(t0));
    if (failed = (*rt)->Destroy("hib"); !failed.ok()) break;
    runtime::native::RemoveTree(spec.writable_dir).IgnoreError();

    // Raw runsc.
    unlink((raw_out + "/tick").c_str());
    const std::string id = fmt::format("raw{}", round);
    if (failed = raw_cmd({"run", "--detach", "--bundle", bundle, id}); !failed.ok()) break;
    if (!WaitTicking(raw_out)) {
      failed = InternalError("the raw runsc container never ticked");
      break;
    }
    runtime::native::RemoveTree(raw_image).IgnoreError();
    mkdir(raw_image.c_str(), 0700);
    t0 = Clock::now();
    if (failed = raw_cmd({"checkpoint", "--image-path", raw_image, id}); !failed.ok()) break;
    if (failed = raw_cmd({"delete", "--force", id}); !failed.ok()) break;
    reference.hibernate.push_back(Ms(t0));
    const long raw_before = ReadTick(raw_out);
    t0 = Clock::now();
    if (failed =
            raw_cmd({"restore", "--detach", "--image-path", raw_image, "--bundle", bundle, id});
        !failed.ok()) {
      break;
    }
    reference.restore.push_back(Ms(t0));
    if (!WaitTickPast(raw_out, raw_before)) {
      failed = InternalError("the restored raw runsc container never ticked");
      break;
    }
    reference.running.push_back(Ms(t0));
    raw_cmd({"delete", "--force", id}).IgnoreError();
  }
  for (const auto& info : (*rt)->List()) (*rt)->Destroy(info.id).IgnoreError();
  for (int round = 0; round < n; ++round) {
    raw_cmd({"delete", "--force", fmt::format("raw{}", round)}).IgnoreError();
  }
  runtime::gvisor::GvisorRuntime::RemoveEmptyCgroups(fmt::format("warren-gvbench-{}", getpid()));
  runtime::gvisor::GvisorRuntime::RemoveEmptyCgroups(
      fmt::format("warren-gvbench-raw-{}", getpid()));
  if (!failed.ok()) {
    fmt::print(stderr, "gvisor_hibernate_bench: {}\n", failed.ToString());
    return 1;
  }

  fmt::print("gvisor_hibernate_bench: runsc 20221219 ptrace, {} MB held in memory, N={}\n", mb, n);
  fmt::print("  {:<52} {:>4} {:>9} {:>9} {:>9}\n", "ms", "n", "min", "p50", "p99");
  Print("warren hibernate (checkpoint, delete, unmount)", warren.hibernate);
  Print("  reference: runsc checkpoint + runsc delete", reference.hibernate);
  Print("warren restore (Resume returns)", warren.restore);
  Print("  reference: runsc restore --detach", reference.restore);
  Print("warren restore → the process ticks again", warren.running);
  Print("  reference: runsc restore → the process ticks again", reference.running);
  fmt::print("  ratios of medians: hibernate {:.2f}x, restore {:.2f}x, to running {:.2f}x\n",
             Median(warren.hibernate) / Median(reference.hibernate),
             Median(warren.restore) / Median(reference.restore),
             Median(warren.running) / Median(reference.running));
  return 0;
}
