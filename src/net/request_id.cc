#include "net/request_id.h"

#include <cstddef>
#include <cstdint>

#include "base/ids.h"

namespace warren::net {

std::string FreshRequestId() {
  constexpr size_t kIdBytes = 16;
  constexpr size_t kBlock = 128 * kIdBytes;
  thread_local uint8_t block[kBlock];
  thread_local size_t used = kBlock;
  if (used == kBlock) {
    base::RandomBytes(block, kBlock);
    used = 0;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * kIdBytes, '\0');
  for (size_t i = 0; i < kIdBytes; ++i) {
    uint8_t b = block[used + i];
    out[2 * i] = kHex[b >> 4];
    out[2 * i + 1] = kHex[b & 15];
  }
  used += kIdBytes;
  return out;
}

}  // namespace warren::net
