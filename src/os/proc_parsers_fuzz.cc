// /proc text the runtime parses: a sandbox controls its processes' command names (in
// /proc/<pid>/stat) and mount points inside its own namespace.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "os/cgroup.h"
#include "os/mount.h"
#include "os/pidfd.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = warren::os::ParseStatStartTime(text);
  (void)t;
  auto m = warren::os::ParseMountInfo(text);
  if (m.ok()) {
    for (const auto& e : *m) (void)e.mount_point.size();
  }
  (void)warren::os::FlatKeyedValue(text, "oom_kill");
  return 0;
}
