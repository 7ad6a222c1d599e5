// Layer unpack throughput: our unpacker (digest check included) and a whole store import,
// beside GNU tar extracting the same blob in the same run.
//
// The layer is synthetic: WARREN_BENCH_LAYER_MB (default 16) of files from 200 B to 256 KiB with
// compressible text, in nested directories, plus symlinks. WARREN_BENCH_LAYER=<blob> benches a
// real layer blob instead (e.g. the base image's), with its compression auto-detected.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>

#include "base/check.h"
#include "image/image_store.h"
#include "image/layer_unpacker.h"
#include "image/safe_fs.h"
#include "image/testing/oci_builder.h"

extern char** environ;

namespace warren::image {
namespace {

using ::warren::image::testing::BuildTar;
using ::warren::image::testing::OciLayoutBuilder;
using ::warren::image::testing::TarEntry;
using ::warren::image::testing::TempDir;

struct Fixture {
  TempDir tmp;
  uint64_t tar_bytes = 0;  // uncompressed size of the tar stream
  std::string layouts[2];  // gzip, zstd
  Descriptor layers[2];
};

std::vector<TarEntry> SyntheticEntries(uint64_t target_bytes) {
  std::mt19937_64 rng(42);
  const char* words[] = {"sandbox ", "layer ", "overlay ", "python ", "agent ", "lib ", "\n"};
  std::vector<TarEntry> entries;
  uint64_t total = 0;
  for (int d = 0; total < target_bytes; ++d) {
    std::string dir = "usr/lib/pkg" + std::to_string(d);
    entries.push_back(TarEntry::Dir(dir));
    for (int f = 0; f < 40 && total < target_bytes; ++f) {
      size_t size = 200 + rng() % (rng() % 8 == 0 ? 256 * 1024 : 16 * 1024);
      std::string data;
      data.reserve(size);
      while (data.size() < size) data += words[rng() % 7];
      data.resize(size);
      total += size;
      entries.push_back(TarEntry::File(dir + "/f" + std::to_string(f), std::move(data)));
      if (f % 10 == 0) {
        entries.push_back(
            TarEntry::Symlink(dir + "/l" + std::to_string(f), "f" + std::to_string(f)));
      }
    }
  }
  return entries;
}

Fixture& GetFixture() {
  // Destroyed at exit, which removes its temporary directory.
  static std::unique_ptr<Fixture> fixture = [] {
    auto f = std::make_unique<Fixture>();
    std::vector<TarEntry> entries;
    const char* real = getenv("WARREN_BENCH_LAYER");
    const char* mb = getenv("WARREN_BENCH_LAYER_MB");
    uint64_t target = (mb != nullptr ? std::strtoull(mb, nullptr, 10) : 16) << 20;
    if (real == nullptr) {
      entries = SyntheticEntries(target);
      f->tar_bytes = BuildTar(entries, LayerCompression::kNone).size();
    }
    const LayerCompression kinds[2] = {LayerCompression::kGzip, LayerCompression::kZstd};
    for (int i = 0; i < 2; ++i) {
      f->layouts[i] = f->tmp.Sub(i == 0 ? "gzip" : "zstd");
      OciLayoutBuilder b(f->layouts[i]);
      if (real != nullptr) {
        std::string bytes = testing::ReadFile(real);
        f->layers[i] = b.AddBlob(bytes, testing::LayerMediaType(kinds[i]));
      } else {
        f->layers[i] = b.AddLayer(entries, kinds[i]);
      }
      b.AddImage({f->layers[i]}, {}, "bench:1");
      b.WriteIndex();
    }
    if (real != nullptr) {
      // The uncompressed size of a real layer: what GNU tar reads.
      f->tar_bytes = 0;
      std::string cmd = std::string("zstd -dcq '") + real + "' 2>/dev/null | wc -c || gzip -dc '" +
                        real + "' | wc -c";
      FILE* p = popen(cmd.c_str(), "r");
      CHECK(p != nullptr);
      unsigned long long n = 0;
      if (fscanf(p, "%llu", &n) == 1) f->tar_bytes = n;
      pclose(p);
    }
    return f;
  }();
  return *fixture;
}

std::string BlobPath(int kind) {
  Fixture& f = GetFixture();
  return f.layouts[kind] + "/blobs/sha256/" + f.layers[kind].digest.hex();
}

void BM_WarrenUnpack(benchmark::State& state) {
  Fixture& f = GetFixture();
  int kind = static_cast<int>(state.range(0));
  UnpackOptions options;
  options.same_owner = geteuid() == 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::string dest = f.tmp.Sub("out");
    std::filesystem::create_directories(dest);
    base::UniqueFd dest_fd(open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    base::UniqueFd blob(open(BlobPath(kind).c_str(), O_RDONLY | O_CLOEXEC));
    state.ResumeTiming();
    auto stats = UnpackLayerBlob(blob.get(), {f.layers[kind].digest, f.layers[kind].size},
                                 dest_fd.get(), options);
    CHECK_OK(stats.status());
    state.PauseTiming();
    CHECK_OK(RemoveTree(dest));
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(f.tar_bytes * state.iterations()));
  state.SetLabel(kind == 0 ? "gzip" : "zstd");
}

// The reference: GNU tar (with gzip/zstd as its filter programs) on the same blob.
void BM_GnuTarExtract(benchmark::State& state) {
  Fixture& f = GetFixture();
  int kind = static_cast<int>(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    std::string dest = f.tmp.Sub("out");
    std::filesystem::create_directories(dest);
    std::string blob = BlobPath(kind);
    std::vector<std::string> args = {"tar", kind == 0 ? "-xzf" : "--zstd", blob, "-C", dest};
    if (kind == 1) args = {"tar", "--zstd", "-xf", blob, "-C", dest};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    state.ResumeTiming();
    pid_t pid;
    CHECK(posix_spawnp(&pid, "tar", nullptr, nullptr, argv.data(), environ) == 0);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "tar failed");
    state.PauseTiming();
    CHECK_OK(RemoveTree(dest));
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(f.tar_bytes * state.iterations()));
  state.SetLabel(kind == 0 ? "gzip (reference)" : "zstd (reference)");
}

// A whole import: index, manifest, config, layer unpack, records; then rm + gc untimed.
void BM_StoreImport(benchmark::State& state) {
  Fixture& f = GetFixture();
  int kind = static_cast<int>(state.range(0));
  ImageStoreOptions options;
  options.root = f.tmp.Sub("store");
  auto store = std::move(ImageStore::Open(options)).value();
  for (auto _ : state) {
    auto record = store->Import(f.layouts[kind]);
    CHECK_OK(record.status());
    state.PauseTiming();
    CHECK_OK(store->Remove("bench:1").status());
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(f.tar_bytes * state.iterations()));
  state.SetLabel(kind == 0 ? "gzip" : "zstd");
}

BENCHMARK(BM_WarrenUnpack)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GnuTarExtract)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_StoreImport)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace warren::image
