#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::server::e2b {

// One entry as E2B's volume content API reports it. Ids are as sandboxes see them.
struct VolumeEntry {
  std::string name;
  std::string path;    // from the volume's root, with a leading '/'
  std::string type;    // file, directory, symlink, unknown
  std::string target;  // a symlink's, as written (never followed)
  int64_t size = 0;
  uint32_t mode = 0;  // permission bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  base::WallTime atime{}, mtime{}, ctime{};
};

// Ownership and mode for what a call makes or changes (unset: root's, 0644 files, 0755 dirs).
struct VolumeOwner {
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint32_t> mode;
};

// The files of one volume, reached from the host for E2B's /volumecontent routes. Everything
// in a volume was possibly written by a sandbox, so every path is walked one component at a
// time from the volume's root without following any symlink or leaving the file system (a
// planted link to /etc is a link, never a way out); files are opened without blocking (a FIFO
// cannot hang a handler) and only regular files are read. Ids inside the volume are the
// sandboxes' (a user-namespaced sandbox's uid N is the host's id_offset + N); what is made here
// gets its owner that way. Paths: "/a/b" or "a/b"; "" and "/" are the root; ".." anywhere is
// refused. Errors: NotFound, InvalidArgument (bad path, a symlink or non-directory in the way),
// AlreadyExists, FailedPrecondition (wrong type), ResourceExhausted (the volume's size limit).
// Value type holding the root's fd; each call is independent and thread-safe.
class VolumeFiles {
 public:
  static Result<VolumeFiles> Open(const std::string& root, uint32_t id_offset);

  // The entries of directory `path`, `depth` levels down (1: its own), sorted, at most
  // kMaxListed (then cut).
  Result<std::vector<VolumeEntry>> List(std::string_view path, int depth) const;
  Result<VolumeEntry> Stat(std::string_view path) const;
  // force: missing parents are made and an existing directory is fine.
  Result<VolumeEntry> MakeDir(std::string_view path, const VolumeOwner& owner, bool force) const;
  // Replaces the file whole (a temporary file renamed over it); missing parents are made.
  Result<VolumeEntry> Write(std::string_view path, std::string_view data,
                            const VolumeOwner& owner) const;
  // A regular file's bytes; ResourceExhausted above `max_bytes`.
  Result<std::string> Read(std::string_view path, size_t max_bytes) const;
  Result<VolumeEntry> SetMetadata(std::string_view path, const VolumeOwner& owner) const;
  // A file, a symlink (not what it points to) or a directory with everything in it.
  Status Remove(std::string_view path) const;

  static constexpr size_t kMaxListed = 10000;

 private:
  VolumeFiles(base::UniqueFd root, uint32_t id_offset)
      : root_(std::move(root)), id_offset_(id_offset) {}

  struct Located {
    base::UniqueFd parent;  // the directory holding it (the root's own fd for the root)
    std::string name;       // "" for the root itself
    std::string path;       // normalised, with a leading '/'
  };
  // Walks to the parent of `path`, making missing directories when `create_parents`.
  Result<Located> Locate(std::string_view path, bool create_parents,
                         const VolumeOwner& owner) const;
  Result<VolumeEntry> StatAt(const Located& at) const;
  uint32_t HostId(uint32_t id) const { return id_offset_ + id; }
  uint32_t SandboxId(uint32_t host) const;

  base::UniqueFd root_;
  uint32_t id_offset_;
};

}  // namespace warren::server::e2b
