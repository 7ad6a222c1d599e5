// What the sandbox filter costs: loading it (in every sandbox's child, before its exec) and
// running it (on every system call a sandbox makes), for the program the runtime loads (the
// hand-compiled sections, seccomp_section.h) beside libseccomp's program for the same profile
// and ABIs, and a call without any filter as the reference. Each measurement runs in a forked
// child, since a filter cannot be taken off again.
#include <benchmark/benchmark.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>

#include "os/seccomp.h"

namespace warren::os {
namespace {

enum Program { kNone, kHandCompiled, kLibseccomp };

const SeccompProgram* ProgramOf(int which) {
  static const auto hand =
      CompileSeccompProfile(DockerDefaultSeccompProfile(), KernelSeccompAbis());
  static const auto lib =
      CompileSeccompProfileWithLibseccomp(DockerDefaultSeccompProfile(), KernelSeccompAbis());
  if (which == kHandCompiled) return hand.ok() ? &*hand : nullptr;
  if (which == kLibseccomp) return lib.ok() ? &*lib : nullptr;
  return nullptr;
}

// Runs `work` in a forked child after no_new_privs; returns the seconds it reported.
template <typename Work>
std::optional<double> InChild(Work work) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  pid_t child = fork();
  if (child == 0) {
    double seconds = -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) seconds = work();
    (void)!write(fds[1], &seconds, sizeof seconds);
    _exit(0);
  }
  close(fds[1]);
  double seconds = -1;
  ssize_t got = read(fds[0], &seconds, sizeof seconds);
  close(fds[0]);
  waitpid(child, nullptr, 0);
  if (got != sizeof seconds || seconds < 0) return std::nullopt;
  return seconds;
}

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_LoadFilter(benchmark::State& state) {
  const SeccompProgram* program = ProgramOf(static_cast<int>(state.range(0)));
  if (program == nullptr) return state.SkipWithError("the program did not compile");
  for (auto _ : state) {
    auto seconds = InChild([&] {
      auto t0 = std::chrono::steady_clock::now();
      return program->LoadRaw() == 0 ? Since(t0) : -1.0;
    });
    if (!seconds) return state.SkipWithError("loading the filter failed");
    state.SetIterationTime(*seconds);
  }
  state.counters["instructions"] = static_cast<double>(program->instructions());
}
BENCHMARK(BM_LoadFilter)
    ->ArgName("program")
    ->Arg(kHandCompiled)
    ->Arg(kLibseccomp)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// One iteration: 20,000 calls of `nr` (getppid: 110, low in the table; getrandom: 318,
// high) in a
// child, timed there; `ns_per_call` is what one call took.
void BM_SyscallUnderFilter(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  const long nr = state.range(1);
  const SeccompProgram* program = ProgramOf(which);
  if (which != kNone && program == nullptr) return state.SkipWithError("no program");
  constexpr int kCalls = 20'000;
  double per_call = 0;
  for (auto _ : state) {
    auto seconds = InChild([&] {
      if (program != nullptr && program->LoadRaw() != 0) return -1.0;
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kCalls; ++i) {
        // getrandom of 0 bytes returns at once: the filter's cost shows, not the call's.
        benchmark::DoNotOptimize(syscall(nr, -1, nullptr, 0, 0, nullptr));
      }
      return Since(t0);
    });
    if (!seconds) return state.SkipWithError("the child failed");
    state.SetIterationTime(*seconds);
    per_call += *seconds * 1e9 / kCalls;
  }
  state.counters["ns_per_call"] = benchmark::Counter(per_call, benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_SyscallUnderFilter)
    ->ArgNames({"program", "nr"})
    ->ArgsProduct({{kNone, kHandCompiled, kLibseccomp}, {SYS_getppid, SYS_getrandom}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace warren::os

BENCHMARK_MAIN();
