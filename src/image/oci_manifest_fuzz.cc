// libFuzzer target: arbitrary bytes through every parser of untrusted image metadata (index,
// manifest, config, image names, archive entry paths). They must return errors, never crash,
// and a parsed config must survive a round trip through its serialiser.

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "image/oci.h"
#include "image/reference.h"
#include "image/safe_fs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace warren::image;
  (void)PeekMediaType(text, "fuzz");
  (void)ParseIndex(text, "fuzz");
  (void)ParseManifest(text, "fuzz");
  auto config = ParseImageConfig(text, "fuzz");
  if (config.ok()) {
    auto again = ParseImageConfig(ImageConfigToJson(*config), "round trip");
    // Invalid UTF-8 is replaced on output, so only valid documents must round-trip exactly.
    if (!again.ok()) abort();
  }
  if (size < 300) {
    (void)ParseImageRef(text);
    (void)SplitEntryPath(text);
    (void)Digest::Parse(text);
  }
  return 0;
}
