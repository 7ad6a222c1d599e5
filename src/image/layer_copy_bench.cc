// Writable-layer copy (what a snapshot does while the sandbox is frozen): CopyWritableLayer,
// which copies and hashes in one pass, beside `cp -a` of the same tree in the same run, and
// beside hashing alone. WARREN_BENCH_COPY_MB (default 100) files of 1 MiB of random bytes.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/unique_fd.h"
#include "image/digest.h"
#include "image/layer_copier.h"
#include "image/testing/oci_builder.h"

extern char** environ;

namespace warren::image {
namespace {

using ::warren::image::testing::TempDir;

// The source tree the benchmarks share: made once, removed (TempDir) when the process exits.
struct Tree {
  Tree() {
    const char* mb = std::getenv("WARREN_BENCH_COPY_MB");
    const int files = mb != nullptr ? std::atoi(mb) : 100;
    source = tmp.Sub("upper");
    std::filesystem::create_directories(source + "/data");
    std::mt19937_64 rng(7);
    std::string chunk(1 << 20, '\0');
    for (int i = 0; i < files; ++i) {
      for (size_t j = 0; j + 8 <= chunk.size(); j += 8) {
        uint64_t v = rng();
        chunk.replace(j, 8, reinterpret_cast<const char*>(&v), 8);
      }
      std::ofstream(source + "/data/f" + std::to_string(i), std::ios::binary) << chunk;
      bytes += chunk.size();
    }
  }

  TempDir tmp;
  std::string source;
  uint64_t bytes = 0;
  int runs = 0;
};

Tree& TheTree() {
  static Tree tree;
  return tree;
}

std::string NextDest(Tree& t) { return t.tmp.Sub("copy" + std::to_string(t.runs++)); }

void BM_CopyWritableLayer(benchmark::State& state) {
  if (geteuid() != 0) {
    state.SkipWithError("needs root (ownership, devices)");
    return;
  }
  Tree& t = TheTree();
  base::UniqueFd src(open(t.source.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (auto _ : state) {
    state.PauseTiming();
    std::string dest = NextDest(t);
    std::filesystem::create_directories(dest);
    base::UniqueFd dst(open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    state.ResumeTiming();
    auto copied = CopyWritableLayer(src.get(), dst.get(), {});
    CHECK(copied.ok());
    state.PauseTiming();
    std::filesystem::remove_all(dest);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(t.bytes * state.iterations()));
}

// The reference: GNU cp -a of the same tree.
void BM_CpA(benchmark::State& state) {
  Tree& t = TheTree();
  for (auto _ : state) {
    state.PauseTiming();
    std::string dest = NextDest(t);
    std::vector<std::string> args = {"cp", "-a", t.source, dest};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    state.ResumeTiming();
    pid_t pid;
    CHECK(posix_spawnp(&pid, "cp", nullptr, nullptr, argv.data(), environ) == 0);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cp failed");
    state.PauseTiming();
    std::filesystem::remove_all(dest);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(t.bytes * state.iterations()));
}

// SHA-256 of the same bytes from memory: the floor of a copy that content-addresses.
void BM_Sha256Only(benchmark::State& state) {
  Tree& t = TheTree();
  std::string chunk(1 << 20, 'x');
  for (auto _ : state) {
    Sha256Stream h;
    for (uint64_t done = 0; done < t.bytes; done += chunk.size()) h.Update(chunk);
    benchmark::DoNotOptimize(h.Finish());
  }
  state.SetBytesProcessed(static_cast<int64_t>(t.bytes * state.iterations()));
}

BENCHMARK(BM_CopyWritableLayer)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CpA)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Sha256Only)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace warren::image
