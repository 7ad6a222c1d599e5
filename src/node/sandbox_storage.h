#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "node/options.h"
#include "os/loop_device.h"

namespace warren::node {

// Space on one file system, in bytes.
struct DiskSpace {
  int64_t total_bytes = 0;
  int64_t free_bytes = 0;  // available to unprivileged writers (f_bavail)
};
Result<DiskSpace> ReadDiskSpace(const std::string& path);

// What the host keeps free on the file system of the agent's root: the larger of
// reserve_percent of its size and min_reserve_bytes.
int64_t HostReserveBytes(const DiskSpace& host, const StorageOptions& options);
// The size of a new sandbox-storage image: options.image_bytes when set, else the free space
// beyond the host reserve; never more than that free space. FailedPrecondition (saying how
// much is free and reserved) when that leaves less than the smallest useful image (1Gi).
Result<int64_t> StorageImageBytes(const DiskSpace& host, const StorageOptions& options);
// Why no sandbox may start now ("12Gi free ... below the host reserve of 25Gi"), or nothing.
std::optional<std::string> DiskPressure(const DiskSpace& host, const StorageOptions& options);

// Where sandboxes' own files live (<root>/sandboxes/<id>: writable layer, logs, emptyDirs) and
// how their ephemeral-storage is enforced. Enforced: <root>/sandboxes is a btrfs file system
// with quota groups — a sparse image <root>/sandboxes.btrfs made once (sized by
// StorageImageBytes) and loop-mounted there, reused across restarts, or a btrfs an operator
// mounted there — and each sandbox directory is a subvolume limited to its ephemeral-storage,
// so a write past it fails with EDQUOT inside the sandbox. Not enforced (the kernel or tools
// lack something, or StorageOptions::enforce is off): plain directories on the data dir's file
// system, and reason() says why; the node refuses templates that name ephemeral-storage.
//
// Ownership: owns the mount while it runs; Close decides whether it outlives this object
// (running sandboxes still write through it). Thread-safety: immutable after Open except
// Close; MakeSandboxDir, RemoveSandboxDir and HostDiskPressure may be called from any thread.
class SandboxStorage {
 public:
  // Never fails: a storage that cannot be enforced is returned as not enforced, with why.
  static std::unique_ptr<SandboxStorage> Open(const std::string& root,
                                              const StorageOptions& options);
  ~SandboxStorage();

  bool enforced() const { return enforced_; }
  // Why ephemeral-storage is not enforced ("" when it is).
  const std::string& reason() const { return reason_; }
  // The size of the sandbox file system (0 when not enforced): no request may exceed it.
  int64_t capacity_bytes() const { return capacity_bytes_; }
  const std::string& sandboxes_dir() const { return sandboxes_dir_; }
  // The image file (empty when not enforced or when an operator's btrfs is used).
  const std::string& image() const { return image_; }

  // Makes the sandbox directory `dir` (beneath sandboxes_dir(), its parent existing), mode
  // 0711: a subvolume limited to `limit_bytes` when enforced (an existing subvolume gets the
  // limit again: a retried create), else a plain directory. Volumes use it too.
  Status MakeSandboxDir(const std::string& dir, int64_t limit_bytes) const;
  // Removes a sandbox directory and everything in it; Ok when it does not exist.
  Status RemoveSandboxDir(const std::string& dir) const;
  // DiskPressure() of the data dir's file system now.
  std::optional<std::string> HostDiskPressure() const;

  // Stops using the storage: unmounts the image when `sandboxes_remain` is false; else leaves
  // it mounted for the sandboxes still running (the next agent on this root takes it over).
  // Called once; the destructor keeps the mount when Close was not called.
  void Close(bool sandboxes_remain);

 private:
  SandboxStorage(std::string root, StorageOptions options);
  // Sets up enforcement; on failure the storage stays unenforced with the status as reason.
  Status Enforce();
  Status MakeImage(const DiskSpace& host);

  const std::string root_;
  const std::string sandboxes_dir_;
  const StorageOptions options_;
  std::string image_;
  bool enforced_ = false;
  std::string reason_;
  int64_t capacity_bytes_ = 0;
  std::optional<os::LoopMount> mount_;  // set when this agent mounted (or took over) the image
};

}  // namespace warren::node
