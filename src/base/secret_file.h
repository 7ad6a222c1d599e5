#pragma once

#include <string>

#include "base/result.h"

namespace warren::base {

// The random secret kept in `path` (hex, one line, mode 0600), made on first use with
// `random_bytes` bytes from the kernel CSPRNG. Two processes making it at once agree: the file
// is created with O_EXCL and the loser reads the winner's. A file holding fewer than
// `random_bytes` bytes of hex is DataLoss (someone truncated it; making a new one would lock
// out everything the old one protected).
Result<std::string> LoadOrCreateSecretFile(const std::string& path, size_t random_bytes);

}  // namespace warren::base
