#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "envd/filesystem_messages.h"
#include "os/user_db.h"

namespace warren::envd {

// The file operations of the Filesystem service and of /files, on absolute paths already
// resolved (paths.h). envd runs as root: operations are not permission-checked against the
// user; the user only owns what is created (e2b-protocol.md §3.2). Errors: NotFound for a missing
// path, AlreadyExists / InvalidArgument as the service table says, others from errno.
// Thread-safe (no state besides the user database, read per call).
class FilesystemOps {
 public:
  explicit FilesystemOps(const os::UserDb& users) : users_(users) {}

  // lstat-based EntryInfo of `path` (`path` is reported as given).
  Result<EntryInfo> Stat(const std::string& path) const;
  // mkdir -p; new directories are 0755 and owned by the user. AlreadyExists when `path` is a
  // directory already.
  Result<EntryInfo> MakeDir(const std::string& path, const os::UserInfo& owner) const;
  // rename(2), creating the destination's parents for the user.
  Result<EntryInfo> Move(const std::string& source, const std::string& destination,
                         const os::UserInfo& owner) const;
  // Pre-order walk in lexical byte order down to `depth` levels (0 means 1).
  Result<std::vector<EntryInfo>> ListDir(const std::string& path, uint32_t depth) const;
  // rm -rf without following symlinks; a missing path is success.
  Status Remove(const std::string& path) const;

  // Creates the missing parent directories of `path` (0755, owned by `owner`).
  Status MakeParents(const std::string& path, const os::UserInfo& owner) const;

  // User metadata (xattrs user.e2b.<key>) of a file; replaced as a whole by SetMetadata.
  static std::map<std::string, std::string> GetMetadata(const std::string& path);
  static Status SetMetadata(int fd, const std::map<std::string, std::string>& metadata);

 private:
  // Builds the entry from lstat data, reusing the name caches of one listing.
  struct NameCache;
  Result<EntryInfo> MakeEntry(const std::string& path, NameCache& names) const;
  Status MakeDirs(const std::string& path, const os::UserInfo& owner, bool* created_last) const;

  const os::UserDb& users_;
};

// Go's os.FileMode.String() for a stat mode: "-rw-r--r--", "drwxr-xr-x", "Lrwxrwxrwx".
std::string GoPermissionString(mode_t mode);

}  // namespace warren::envd
