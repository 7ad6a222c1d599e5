#include "node/node_secret.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/encoding.h"
#include "base/ids.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "base/unique_fd.h"

namespace warren::node {

Result<NodeSecret> NodeSecret::LoadOrCreate(const std::string& path) {
  auto existing = base::ReadSmallFile(path, 4096);
  if (existing.ok()) {
    std::string master(base::TrimSpace(*existing));
    if (master.size() < 32) {
      return DataLossError(
          fmt::format("{}: node secret is too short ({} characters)", path, master.size()));
    }
    return NodeSecret(std::move(master));
  }
  if (existing.status().code() != StatusCode::kNotFound) return existing.status();
  std::string master = base::RandomHex(32);
  // O_EXCL: two agents on one root would otherwise race; the loser reads the winner's.
  base::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) {
    if (errno == EEXIST) return LoadOrCreate(path);
    return ErrnoError(fmt::format("create {}", path), errno);
  }
  std::string line = master + "\n";
  if (write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
      fsync(fd.get()) != 0) {
    int err = errno;
    unlink(path.c_str());
    return ErrnoError(fmt::format("write {}", path), err);
  }
  return NodeSecret(std::move(master));
}

std::string NodeSecret::ForSandbox(const std::string& sandbox_id) const {
  return base::HexEncode(base::HmacSha256(master_, "envd-node-secret:" + sandbox_id));
}

}  // namespace warren::node
