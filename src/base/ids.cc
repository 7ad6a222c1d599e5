#include "base/ids.h"

#include <sys/random.h>

#include <cerrno>
#include <string_view>

#include "base/check.h"
#include "base/encoding.h"

namespace warren::base {

void RandomBytes(void* out, size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    ssize_t got = getrandom(p, n, 0);
    if (got < 0) {
      CHECK_MSG(errno == EINTR, "getrandom failed, errno " << errno);
      continue;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
}

namespace {

std::string RandomFromAlphabet(size_t n, std::string_view alphabet) {
  std::string out;
  out.reserve(n);
  // Rejection sampling keeps the distribution uniform over the alphabet.
  const unsigned limit = 256 - (256 % alphabet.size());
  unsigned char buf[64];
  while (out.size() < n) {
    RandomBytes(buf, sizeof(buf));
    for (unsigned char b : buf) {
      if (b >= limit) continue;
      out.push_back(alphabet[b % alphabet.size()]);
      if (out.size() == n) break;
    }
  }
  return out;
}

constexpr std::string_view kLowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789";

}  // namespace

std::string RandomAlnum(size_t n) { return RandomFromAlphabet(n, kLowerAlnum); }

std::string NewSandboxId() { return "i" + RandomAlnum(20); }

bool IsValidSandboxId(std::string_view id) {
  if (id.size() != 21 || id[0] != 'i') return false;
  for (char c : id.substr(1)) {
    if (kLowerAlnum.find(c) == std::string_view::npos) return false;
  }
  return true;
}

std::string GenerateNameSuffix() { return RandomFromAlphabet(5, "bcdfghjklmnpqrstvwxz2456789"); }

std::string RandomHex(size_t n) {
  std::string bytes(n, '\0');
  RandomBytes(bytes.data(), n);
  return HexEncode(bytes);
}

std::string NewRequestId() {
  // Every HTTP response carries one, so a busy server loop would otherwise make one getrandom
  // call per request: each thread draws 128 ids' worth of bytes at a time instead.
  constexpr size_t kIdBytes = 16;
  constexpr size_t kBlock = 128 * kIdBytes;
  thread_local unsigned char block[kBlock];
  thread_local size_t used = kBlock;
  if (used == kBlock) {
    RandomBytes(block, kBlock);
    used = 0;
  }
  std::string out = HexEncode({reinterpret_cast<const char*>(block + used), kIdBytes});
  used += kIdBytes;
  return out;
}

std::string NewUuid() {
  unsigned char b[16];
  RandomBytes(b, sizeof(b));
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 15]);
  }
  return out;
}

}  // namespace warren::base
