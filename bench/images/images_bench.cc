// bench/images: a multi-layer image (default 500 MB in 5 gzip layers, half noise and half text,
// as real images mix binaries and text) pushed to a local docker-registry, then pulled into a
// fresh Warren image store — fetched, verified and unpacked, ready to mount — beside
// `skopeo copy` of the same image to an OCI layout (fetched and verified, not unpacked) in the
// same run, and beside our own pull one layer at a time.
//
//   images_bench [--mb 500] [--layers 5] [--rounds 3]
//   images_bench --smoke            # 20 MB, one round: checks it runs
//
// Needs docker-registry and skopeo (scripts/install-deps); exits 77 (skipped) without them.

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/log.h"
#include "image/image_store.h"
#include "image/testing/oci_builder.h"
#include "image/testing/registry_fixture.h"

namespace warren::bench {
namespace {

using Clock = std::chrono::steady_clock;
using image::testing::OciLayoutBuilder;
using image::testing::TarEntry;

struct Options {
  int mb = 500;
  int layers = 5;
  int rounds = 3;
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Layer i holds a share of the bytes (larger first, as base layers are): half noise, half text.
std::vector<image::Descriptor> BuildLayers(OciLayoutBuilder& b, const Options& o) {
  std::mt19937_64 gen(42);
  std::vector<image::Descriptor> out;
  double weights_sum = 0;
  for (int i = 0; i < o.layers; ++i) weights_sum += 1.0 / (i + 1);
  for (int i = 0; i < o.layers; ++i) {
    size_t bytes = static_cast<size_t>(o.mb * 1e6 * (1.0 / (i + 1)) / weights_sum);
    std::vector<TarEntry> entries = {TarEntry::Dir(fmt::format("l{}", i))};
    const size_t file = 8 << 20;
    for (size_t done = 0, k = 0; done < bytes; done += file, ++k) {
      size_t n = std::min(file, bytes - done);
      std::string data(n, '\0');
      for (size_t j = 0; j < n / 2; j += 8) {
        uint64_t r = gen();
        std::memcpy(data.data() + j, &r, std::min<size_t>(8, n / 2 - j));
      }
      for (size_t j = n / 2; j < n; ++j) data[j] = "warren sandboxes for agents\n"[j % 28];
      entries.push_back(TarEntry::File(fmt::format("l{}/f{}", i, k), std::move(data)));
    }
    out.push_back(b.AddLayer(entries, image::LayerCompression::kGzip));
  }
  return out;
}

int Run(const Options& o) {
  base::SetLogLevel("warn");
  if (!std::filesystem::exists("/usr/bin/docker-registry") ||
      !std::filesystem::exists("/usr/bin/skopeo")) {
    fmt::print("images_bench: needs docker-registry and skopeo (scripts/install-deps)\n");
    return 77;
  }
  image::testing::TempDir tmp;
  std::filesystem::create_directories(tmp.Sub("registry"));
  auto registry = image::testing::RegistryProcess::Start(tmp.Sub("registry"));
  CHECK(registry.ok());
  const std::string addr = (*registry)->address();
  auto build_started = Clock::now();
  OciLayoutBuilder b(tmp.Sub("layout"));
  auto layers = BuildLayers(b, o);
  b.AddImage(layers, {}, "bench:1");
  b.WriteIndex();
  int64_t compressed = 0;
  for (const auto& l : layers) compressed += l.size;
  CHECK(image::testing::PushLayout(addr, "bench/img", "1", b.dir()).ok());
  fmt::print("image: {} layers, {:.0f} MB compressed ({} MB before), pushed to {} in {:.1f}s\n",
             layers.size(), compressed / 1e6, o.mb, addr, Seconds(Clock::now() - build_started));
  const std::string ref = addr + "/bench/img:1";

  auto warren_pull = [&](size_t parallelism) {
    std::string root = tmp.Sub("store");
    std::filesystem::remove_all(root);
    auto store = image::ImageStore::Open(
        {.root = root, .allowed_registries = *image::RegistryAllowlist::Parse(addr)});
    CHECK(store.ok());
    auto started = Clock::now();
    auto pulled = (*store)->Pull(ref, {.layer_parallelism = parallelism});
    double s = Seconds(Clock::now() - started);
    CHECK_MSG(pulled.ok(), pulled.status().ToString());
    return s;
  };
  auto skopeo = [&] {
    std::string dest = tmp.Sub("skopeo");
    std::filesystem::remove_all(dest);
    std::string cmd = fmt::format(
        "skopeo copy --quiet --src-tls-verify=false docker://{} oci:{}:img >/dev/null", ref, dest);
    auto started = Clock::now();
    int rc = std::system(cmd.c_str());
    double s = Seconds(Clock::now() - started);
    CHECK_MSG(rc == 0, "skopeo copy failed: " << cmd);
    return s;
  };
  std::vector<double> ours, serial, theirs;
  for (int r = 0; r < o.rounds; ++r) {
    // Interleaved, so drift on a shared host hits all three alike.
    ours.push_back(warren_pull(4));
    theirs.push_back(skopeo());
    serial.push_back(warren_pull(1));
  }
  std::filesystem::remove_all(tmp.Sub("store"));
  std::filesystem::remove_all(tmp.Sub("skopeo"));
  auto line = [&](const char* what, const std::vector<double>& v) {
    double m = Median(v);
    std::string rounds;
    for (double x : v) rounds += fmt::format(" {:.2f}s", x);
    fmt::print("{:<44} median {:6.2f}s  {:6.0f} MB/s  (rounds:{})\n", what, m, compressed / 1e6 / m,
               rounds);
  };
  fmt::print("pull of {} ({} rounds):\n", ref, o.rounds);
  line("warren pull (4 layers at once, unpacked)", ours);
  line("warren pull (1 layer at a time, unpacked)", serial);
  line("skopeo copy to an OCI layout (not unpacked)", theirs);
  fmt::print("warren / skopeo: {:.2f}x the time (warren also unpacks; skopeo only stores blobs)\n",
             Median(ours) / Median(theirs));
  return 0;
}

}  // namespace
}  // namespace warren::bench

int main(int argc, char** argv) {
  warren::bench::Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] {
      CHECK_MSG(i + 1 < argc, a << " needs a value");
      return std::atoi(argv[++i]);
    };
    if (a == "--mb") {
      o.mb = next();
    } else if (a == "--layers") {
      o.layers = next();
    } else if (a == "--rounds") {
      o.rounds = next();
    } else if (a == "--smoke") {
      o.mb = 20;
      o.rounds = 1;
    } else {
      fmt::print(stderr, "images_bench: unknown flag {}\n", a);
      return 2;
    }
  }
  return warren::bench::Run(o);
}
