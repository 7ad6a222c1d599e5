#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::node {

// What a Checkpoint keeps of a sandbox's processes and memory on the node that captured it
// (runtimes with StateSupport::memory: gVisor), for sandboxes started from it to go on where
// the source was. Next to its file-system image in the node's image store, not inside it: the
// image store shares layers and ships them, this never leaves the node.
//   <root>/memory/<checkpoint uid>/image         Runtime::CaptureMemory's image
//   <root>/memory/<checkpoint uid>/logs/         the source's log directory at that instant
//                                                (the processes hold its files open by path)
//   <root>/memory/<checkpoint uid>/envd-secret   the node secret the source's envd holds, which
//                                                a clone's envd holds too until it is re-keyed
// Made under <dir>.partial and renamed into place whole.
struct MemoryImagePaths {
  std::string dir;
  std::string image;
  std::string logs;
  std::string secret;

  // For the checkpoint whose file-system image is `image_name` (CheckpointImageName).
  static MemoryImagePaths For(const std::string& root, std::string_view image_name);
  // The same layout under dir + ".partial".
  MemoryImagePaths Staging() const;
};

// The file in a clone's sandbox directory holding the secret its restored envd still has,
// until the node has given it the clone's own (NodeAgent::RekeyRestoredEnvd).
inline constexpr char kEnvdRekeyFile[] = "envd-rekey";

// Copies the regular files directly in `from` into `to` (made 0755 when missing), keeping
// their mode and owner. Subdirectories and other entries are left out.
Status CopyFlatDir(const std::string& from, const std::string& to);

}  // namespace warren::node
