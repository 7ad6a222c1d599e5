// libFuzzer target: arbitrary bytes as a layer blob (plain, gzip or zstd tar) unpacked into a
// fresh directory. Beyond "no crash, no sanitizer report", it checks the property that matters:
// whatever the archive says, nothing appears or changes outside the layer directory.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/unique_fd.h"
#include "image/layer_unpacker.h"
#include "image/safe_fs.h"

namespace {

struct Sandbox {
  std::string base;
  std::string layer;
  std::string outside;
};

const Sandbox& GetSandbox() {
  static const Sandbox* sandbox = [] {
    auto* s = new Sandbox;
    // tmpfs by default: file creation on disk would cap the fuzzer at ~100 runs/s.
    const char* tmp = getenv("TMPDIR");
    std::string dir = tmp != nullptr ? tmp : (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    std::string tmpl = dir + "/warren-unpack-fuzz.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) abort();
    s->base = tmpl;
    s->layer = s->base + "/layer";
    s->outside = s->base + "/outside";
    std::filesystem::create_directories(s->outside);
    std::ofstream(s->outside + "/victim") << "original";
    atexit([] { (void)warren::image::RemoveTree(GetSandbox().base); });
    return s;
  }();
  return *sandbox;
}

void CheckNothingEscaped(const Sandbox& s) {
  for (const auto& e : std::filesystem::directory_iterator(s.base)) {
    std::string name = e.path().filename().string();
    if (name != "layer" && name != "outside") {
      fprintf(stderr, "escape: %s appeared beside the layer\n", name.c_str());
      abort();
    }
  }
  size_t count = 0;
  for (const auto& e : std::filesystem::directory_iterator(s.outside)) {
    (void)e;
    ++count;
  }
  std::ifstream in(s.outside + "/victim");
  std::stringstream content;
  content << in.rdbuf();
  struct stat st;
  if (count != 1 || content.str() != "original" ||
      lstat((s.outside + "/victim").c_str(), &st) != 0 || st.st_nlink != 1) {
    fprintf(stderr, "escape: the outside directory changed\n");
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Sandbox& s = GetSandbox();
  if (mkdir(s.layer.c_str(), 0755) != 0) abort();
  {
    warren::base::UniqueFd root(open(s.layer.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) abort();
    warren::image::UnpackOptions options;
    options.same_owner = geteuid() == 0;
    options.limits.max_bytes = 64 << 20;
    options.limits.max_entries = 20000;
    auto stats = warren::image::UnpackLayerBytes(
        std::string_view(reinterpret_cast<const char*>(data), size), root.get(), options);
    (void)stats;
  }
  CheckNothingEscaped(s);
  if (!warren::image::RemoveTree(s.layer).ok()) abort();
  return 0;
}
