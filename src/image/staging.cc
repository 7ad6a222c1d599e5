#include "image/staging.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>

#include "base/ids.h"
#include "image/logger.h"
#include "image/safe_fs.h"

namespace warren::image {

Result<Staging> Staging::Create(const std::string& staging_root) {
  Staging s;
  s.id_ = base::RandomHex(16);
  s.dir_ = staging_root + "/" + s.id_;
  // The lock first: a cleaner that sees the directory must find it locked.
  ASSIGN_OR_RETURN(s.lock_, FileLock::Acquire(s.dir_ + ".lock", /*remove_on_release=*/true));
  if (mkdir(s.dir_.c_str(), 0700) != 0) return ErrnoError(fmt::format("mkdir '{}'", s.dir_), errno);
  return s;
}

Staging::~Staging() {
  if (!lock_.held()) return;
  Status s = RemoveTree(dir_);
  if (!s.ok()) Log()->warn("staging cleanup failed dir={} error={}", dir_, s.ToString());
}

}  // namespace warren::image
