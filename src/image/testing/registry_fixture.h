#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/result.h"

namespace warren::image::testing {

// A docker-registry process on 127.0.0.1 with its storage in `storage_dir`, stopped (SIGTERM,
// then waited for) on destruction. Owns the child process. Not thread-safe.
class RegistryProcess {
 public:
  // With `redirect_to` (a base URL, "http://host:port/"), the registry answers every blob GET
  // with a redirect to redirect_to + the blob's path in its storage
  // ("docker/registry/v2/blobs/sha256/<2 hex>/<hex>/data"), as registries backed by object
  // storage do.
  static Result<std::unique_ptr<RegistryProcess>> Start(const std::string& storage_dir,
                                                        const std::string& redirect_to = "");
  ~RegistryProcess();
  // SIGKILL, and waits: the registry dies mid-response, as a crashed one does.
  void Kill();
  const std::string& address() const { return address_; }  // "127.0.0.1:PORT"
  // Where the registry keeps a blob's bytes (to corrupt it in tests).
  std::string BlobDataPath(const std::string& hex) const;
  // The root of its filesystem storage: a redirect's path (see Start) is relative to it.
  const std::string& storage_root() const { return storage_; }

 private:
  RegistryProcess() = default;
  pid_t pid_ = -1;
  std::string address_;
  std::string storage_;
};

// Pushes the image of an OCI layout (its first manifest) as repository:tag, the way a
// registry client does: monolithic blob uploads, then the manifest.
Status PushLayout(const std::string& registry, const std::string& repository,
                  const std::string& tag, const std::string& layout_dir);

}  // namespace warren::image::testing
