// State records are read back after a restart; a damaged one must be an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/native/state_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = warren::runtime::native::DecodeRecord(text);
  if (r.ok()) {
    // Whatever decodes re-encodes to something that decodes the same way.
    auto again = warren::runtime::native::DecodeRecord(warren::runtime::native::EncodeRecord(*r));
    if (!again.ok() || again->spec.command != r->spec.command) __builtin_trap();
  }
  return 0;
}
