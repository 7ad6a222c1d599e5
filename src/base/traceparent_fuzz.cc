// libFuzzer target for the traceparent parser: any header a client sends must parse or be
// refused without reading past it, and whatever parses must format back to a header that parses
// to the same context with valid (non-zero) ids. A crash, a sanitizer report or a broken
// invariant (trap) is a bug.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/traceparent.h"

using namespace warren;

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = base::ParseTraceparent(input);
  if (!parsed) return 0;
  Check(parsed->valid());
  std::string formatted = base::FormatTraceparent(*parsed);
  Check(formatted.size() == 55);
  auto again = base::ParseTraceparent(formatted);
  Check(again.has_value() && *again == *parsed);
  return 0;
}
