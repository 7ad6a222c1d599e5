// libFuzzer target for the sealed box: whatever a reader of an object's annotations hands back
// (any string) must not open unless this key sealed it under this context, and every seal must
// open to what was sealed — and to nothing once a byte of it changes. A crash, a sanitizer
// report or a broken invariant (trap) is a bug.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/sealed_box.h"

using namespace warren;

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const base::SealedBox box = base::SealedBox::ForTesting("fuzz");
  static const base::SealedBox other = base::SealedBox::ForTesting("another install");
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // The input as a value someone stored: forged, it never opens.
  auto forged = box.Open(input, "ns/name/key");
  Check(!forged.ok());
  base::SealedBox::LooksSealed(input);

  // The input as a secret: it round-trips, and only here.
  std::string sealed = box.Seal(input, "ns/name/key");
  Check(base::SealedBox::LooksSealed(sealed));
  auto opened = box.Open(sealed, "ns/name/key");
  Check(opened.ok() && *opened == input);
  Check(!box.Open(sealed, "ns/other/key").ok());
  Check(!other.Open(sealed, "ns/name/key").ok());
  for (size_t at : {size_t{3}, sealed.size() / 2, sealed.size() - 1}) {
    std::string bent = sealed;
    bent[at] = bent[at] == 'A' ? 'B' : 'A';
    auto tampered = box.Open(bent, "ns/name/key");
    // Base64url's last character can carry bits the decoder ignores; anything that opens must
    // still be the sealed text, never something else.
    Check(!tampered.ok() || *tampered == input);
  }
  Check(!box.Open(sealed.substr(0, sealed.size() - 1), "ns/name/key").ok() || sealed.size() < 4);
  return 0;
}
