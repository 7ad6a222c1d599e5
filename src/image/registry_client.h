#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "image/digest.h"
#include "image/oci.h"
#include "image/registry_allowlist.h"

namespace warren::image {

// A manifest or index as a registry serves it.
struct FetchedManifest {
  std::string media_type;  // from Content-Type, or the document's mediaType
  std::string body;
  Digest digest;  // of `body`; checked against the reference when that is a digest
};

// A client of the OCI distribution API (/v2/) over plain HTTP, for the node-local or regional
// registry the spikes recommend (docker-registry on loopback). Anonymous only: a registry that
// answers 401 gets an Unauthenticated error naming it. Uses libcurl; one easy handle per call,
// so the object is thread-safe. Blocking: run it on a blocking pool.
//
// It connects only to hosts `Options::allowed` allows: the registry itself and every redirect
// target (followed by hand, at most 5, over http or https) are checked before the request is
// made; a refused one is PermissionDenied naming the URL and the list.
class RegistryClient {
 public:
  struct Options {
    std::chrono::seconds connect_timeout{10};
    // A transfer slower than this many bytes per second for low_speed_time is abandoned.
    long low_speed_bytes = 1024;
    std::chrono::seconds low_speed_time{30};
    RegistryAllowlist allowed;  // empty: every request is refused
    // Every request still running at this instant is abandoned (DeadlineExceeded): a pull
    // attempt's timeout, whatever the registry does.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    // Set from another thread to abandon the requests in progress (Cancelled).
    const std::atomic<bool>* cancel = nullptr;
  };

  // `registry` is "host:port" (or "host").
  RegistryClient(std::string registry, Options options);
  explicit RegistryClient(std::string registry) : RegistryClient(std::move(registry), Options()) {}

  // GET /v2/<repository>/manifests/<reference>, accepting OCI and Docker manifests and indexes.
  Result<FetchedManifest> GetManifest(std::string_view repository, std::string_view reference);

  // Small blob (config) read whole, digest and size checked.
  Result<std::string> GetBlob(std::string_view repository, const Descriptor& descriptor,
                              size_t max_bytes);

  // Streams a blob into the file `path` (created, mode 0600), checking digest and size as the
  // bytes arrive; a mismatch or any failure removes the file (DataLoss for a mismatch), so a
  // file left at `path` is always the whole, verified blob. `on_bytes` (may be empty) is told
  // the running total after each chunk, on the calling thread.
  Status DownloadBlob(std::string_view repository, const Descriptor& descriptor,
                      const std::string& path, const std::function<void(uint64_t)>& on_bytes = {});

  const std::string& registry() const { return registry_; }

 private:
  std::string registry_;
  Options options_;
};

}  // namespace warren::image
