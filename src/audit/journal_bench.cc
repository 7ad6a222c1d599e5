// The audit journal is on every E2B lifecycle call, claims included: one append (encode, open,
// write, close) beside a bare write(2) of the same line to an open file, in the same run.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "audit/journal.h"
#include "base/unique_fd.h"

namespace warren::audit {
namespace {

// A scratch directory for one benchmark, removed with it.
struct ScratchDir {
  ScratchDir() {
    char tmpl[] = "/tmp/warren-journal-bench-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

nlohmann::json Entry() {
  return {{"source", "api"},   {"actor", "bench-key"}, {"keyId", "0123456789abcdef"},
          {"team", "default"}, {"action", "create"},   {"status", 201}};
}

void BM_JournalAppend(benchmark::State& state) {
  ScratchDir dir;
  Journal journal(dir.path, {});
  int i = 0;
  for (auto _ : state) {
    // A new journal every range(0) appends: claims spread over many sandboxes.
    auto s = journal.Append("default", "sbx" + std::to_string(i++ / state.range(0)), Entry());
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_JournalAppend)->Arg(16)->Arg(1 << 30);

// What an E2B call pays: the entry is queued, a writer thread appends it. Every 256 posts the
// clock stops until the writer has caught up (a Read drains), so this is the cost while the disk
// keeps up with the calls, as it does at a claim rate of thousands a second.
void BM_JournalPost(benchmark::State& state) {
  ScratchDir dir;
  Journal journal(dir.path, {});
  int i = 0;
  for (auto _ : state) {
    journal.Post("default", "sbx" + std::to_string(i / 16), Entry());
    if (++i % 256 == 0) {
      state.PauseTiming();
      (void)journal.Read("default", "none", 1);
      state.ResumeTiming();
    }
  }
}
BENCHMARK(BM_JournalPost);

void BM_WriteLineReference(benchmark::State& state) {
  ScratchDir dir;
  base::UniqueFd fd(open((dir.path + "/ref").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600));
  const std::string line = Entry().dump() + "\n";
  for (auto _ : state) {
    benchmark::DoNotOptimize(write(fd.get(), line.data(), line.size()));
  }
}
BENCHMARK(BM_WriteLineReference);

}  // namespace
}  // namespace warren::audit
