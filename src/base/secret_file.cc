#include "base/secret_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>

#include "base/ids.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "base/unique_fd.h"

namespace warren::base {

Result<std::string> LoadOrCreateSecretFile(const std::string& path, size_t random_bytes) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto existing = ReadSmallFile(path, 4096);
    if (existing.ok()) {
      std::string secret(TrimSpace(*existing));
      if (secret.size() < 2 * random_bytes) {
        return DataLossError(fmt::format("{}: the secret is too short ({} hex characters, want {})",
                                         path, secret.size(), 2 * random_bytes));
      }
      return secret;
    }
    if (existing.status().code() != StatusCode::kNotFound) return existing.status();
    std::string secret = RandomHex(random_bytes);
    // O_EXCL: two processes on one directory would otherwise race; the loser reads the winner's.
    UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) {
      if (errno == EEXIST) continue;
      return ErrnoError(fmt::format("create {}", path), errno);
    }
    std::string line = secret + "\n";
    if (write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
        fsync(fd.get()) != 0) {
      int err = errno;
      unlink(path.c_str());
      return ErrnoError(fmt::format("write {}", path), err);
    }
    return secret;
  }
  return InternalError(fmt::format("{}: created and removed again while reading it", path));
}

}  // namespace warren::base
