#pragma once

#include <cstddef>
#include <string>

namespace warren::base {

// All identifiers come from the kernel CSPRNG (getrandom), so they are unguessable and never
// collide in practice. Thread-safe.

// Fills `out` with `n` random bytes.
void RandomBytes(void* out, size_t n);

// A sandbox id as E2B makes them: "i" followed by 20 characters of [a-z0-9].
std::string NewSandboxId();
bool IsValidSandboxId(std::string_view id);

// `n` characters of [a-z0-9].
std::string RandomAlnum(size_t n);

// The suffix Kubernetes appends for metadata.generateName: 5 characters from an alphabet
// without vowels (so no words), e.g. "x7kqz".
std::string GenerateNameSuffix();

// An RFC 4122 version 4 UUID, lower case: metadata.uid, request ids.
std::string NewUuid();

// 32 lowercase hex characters (128 bits): X-Request-ID and trace ids. Each thread draws random
// bytes for 128 ids at a time. Thread-safe.
std::string NewRequestId();

// `n` random bytes as lowercase hex (2n characters): API keys, access tokens.
std::string RandomHex(size_t n);

}  // namespace warren::base
