#pragma once

#include <string>

namespace warren::net {

// A fresh X-Request-ID: 32 lowercase hex characters (128 bits from the kernel CSPRNG), like
// base::NewRequestId, but each thread draws random bytes in blocks, so a busy loop asks the
// kernel once per 128 ids instead of once per request. Thread-safe.
std::string FreshRequestId();

}  // namespace warren::net
