#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "image/digest.h"
#include "image/layer_copier.h"
#include "image/layer_unpacker.h"
#include "image/oci.h"
#include "image/registry_allowlist.h"

namespace warren::image {

class OciLayout;
class Staging;

// A layer as the store holds it: unpacked once under layers/sha256/<hex>/rootfs.
struct LayerRecord {
  Digest digest;  // of the compressed blob (the OCI descriptor digest)
  std::string media_type;
  int64_t compressed_size = 0;
  uint64_t unpacked_bytes = 0;
  uint64_t entries = 0;
  std::string unpacked_at;  // RFC 3339
  std::string dir;          // the overlayfs lower directory (absolute)
};

// A named image: its ordered layers and the config a sandbox starts from.
struct ImageRecord {
  std::string name;  // normalised "repository:tag"
  Digest manifest_digest;
  Digest config_digest;
  std::vector<Digest> layers;  // bottom first
  ImageConfig config;
  int64_t compressed_size = 0;  // sum of layer blob sizes
  std::string imported_at;      // RFC 3339
  std::string source;           // the layout or archive it came from
};

// An image ready to mount.
struct ResolvedImage {
  ImageRecord image;
  std::vector<std::string> lower_dirs;  // bottom first, absolute, one per layer

  // The overlayfs "lowerdir=" value: top-most layer first, ':' separated.
  std::string OverlayLowerDirs() const;
};

// A pin on layers, held by a sandbox (or a snapshot) for as long as it uses them: the layers
// stay on disk even when their image is removed or replaced, until the lease is released.
struct Lease {
  std::string id;     // chosen by the holder, e.g. the sandbox uid
  std::string image;  // the image name it was taken for ("" for a layer lease)
  std::vector<Digest> layers;
  std::string created_at;  // RFC 3339
};

// A step of Pull for one layer, for a caller that shows progress (`warren image pull`, an
// ImagePullJob's status). A missing layer goes Downloading → Bytes… → Downloaded → Unpacking →
// Unpacked; one already in the store is Present.
struct PullProgress {
  enum class Step {
    kLayerPresent,
    kLayerDownloading,
    kLayerBytes,
    kLayerDownloaded,
    kUnpacking,
    kLayerUnpacked
  };
  Step step = Step::kLayerPresent;
  size_t layer = 0;  // 1-based, of `layers`
  size_t layers = 0;
  Digest digest;
  int64_t bytes = 0;                  // the layer's compressed size
  int64_t done = 0;                   // compressed bytes of it fetched so far
  std::chrono::milliseconds took{0};  // kLayerDownloaded: how long the download took
};

struct ImportOptions {
  // The name to give the image; with a multi-image layout also which one to take. Empty: the
  // name the layout's annotations give it.
  std::string name;
  // Pull only: told of each layer's steps (PullProgress), from the threads fetching layers but
  // one call at a time. May be empty.
  std::function<void(const PullProgress&)> on_pull_progress;
  // Layers fetched (a pull) and unpacked at once, by pulls and imports alike.
  size_t layer_parallelism = 4;
  // Pull only: abandon the pull (DeadlineExceeded) when this instant passes...
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // ...or (Cancelled) when this is set from another thread.
  const std::atomic<bool>* cancel = nullptr;
};

struct GcReport {
  std::vector<Digest> removed_layers;
  uint64_t freed_bytes = 0;
  size_t stale_staging_removed = 0;
};

struct ImageStoreOptions {
  // Where the store keeps everything; made (0700) if missing.
  std::string root = "/var/lib/warren/images";
  // Ownership and file capabilities need root; UnpackOptions::same_owner defaults to whether
  // the process is root.
  UnpackOptions unpack;
  base::Clock* clock = nullptr;  // default: the real clock
  // Where Pull may connect: the registry a reference names and every redirect target
  // (registry_allowlist.h). Empty, the default: no pulls at all.
  RegistryAllowlist allowed_registries;
};

// The local content-addressed image and layer store.
//
// On disk, under `root` (the only state; everything survives a restart):
//   layers/sha256/<hex>/rootfs      the unpacked layer: an overlayfs lower directory
//   layers/sha256/<hex>/layer.json  its LayerRecord
//   images/<sha256 of name>.json    an ImageRecord
//   leases/<sha256 of id>.json      a Lease
//   staging/<id>/, staging/<id>.lock  imports in progress (and what a crash left behind)
//   locks/<hex>.lock                held while one layer is unpacked
//   store.lock                      held while records change
// A layer directory appears by one rename of a fully unpacked, verified staging directory, so a
// reader never sees half a layer; it is never modified afterwards. A layer is live while an
// image record or a lease names it; Gc() removes the others.
//
// Thread-safety: all methods are thread-safe, and several processes may open one root at once
// (the node agent and `warren image` verbs): record changes are serialised by an flock on
// store.lock plus a mutex, and each layer is unpacked under its own lock so that concurrent
// imports of one layer unpack it once while imports of different layers run in parallel.
// Unpacking is blocking work: call Import* from a blocking pool, never from an event loop.
class ImageStore {
 public:
  static Result<std::unique_ptr<ImageStore>> Open(ImageStoreOptions options);
  ~ImageStore();

  // Imports an OCI image layout directory or a tarball of one (the path decides).
  Result<ImageRecord> Import(const std::string& path, const ImportOptions& options = {});
  Result<ImageRecord> ImportLayout(const std::string& dir, const ImportOptions& options = {});
  Result<ImageRecord> ImportArchive(const std::string& tar_path, const ImportOptions& options = {});

  // Pulls "host:port/repository:tag" from a registry over plain HTTP (RegistryClient) and
  // imports it under that name (or options.name). PermissionDenied, before any connection,
  // when ImageStoreOptions::allowed_registries does not list the registry; also when a
  // redirect leads to a host it does not list. Only layers the store lacks are downloaded;
  // the linux/amd64 manifest of an index is taken. A layer collected by a concurrent Gc()
  // between the check and the import fails the pull (NotFound); pulling again fetches it.
  Result<ImageRecord> Pull(std::string_view reference, const ImportOptions& options = {});

  // The image record for a name ("base" means "base:latest"); NotFound when absent.
  Result<ImageRecord> Get(std::string_view name) const;
  // The image's lower dirs and config. Without a lease the layers may be collected by a later
  // Gc() once the image is removed; sandboxes should use AcquireLease instead.
  Result<ResolvedImage> Resolve(std::string_view name) const;
  // Every image, sorted by name.
  std::vector<ImageRecord> List() const;
  // Every unpacked layer, sorted by digest.
  std::vector<LayerRecord> ListLayers() const;

  // Removes the image's name and collects layers nothing else holds (leased layers stay).
  Result<GcReport> Remove(std::string_view name);

  // How long a lease must hold. A sandbox's holds while the sandbox runs, and no sandbox runs
  // past a reboot (its runtime state is in /run), so its lease file needs no sync to the disk:
  // a crash of the process keeps it (the kernel's cache has it), and one of the machine leaves
  // nothing for it to hold. A lease that outlives its holder's processes must be durable.
  enum class LeaseLife { kDurable, kUntilReboot };
  // Resolves `image` and pins its layers under `lease_id`, atomically with respect to Remove and
  // Gc. Idempotent: taking the same id for the same image again returns the same pin; for a
  // different image it is AlreadyExists.
  Result<ResolvedImage> AcquireLease(std::string_view lease_id, std::string_view image,
                                     LeaseLife life = LeaseLife::kDurable);
  // Pins specific layers (a snapshot taken on them). NotFound when one is not in the store.
  Result<Lease> AcquireLayerLease(std::string_view lease_id, const std::vector<Digest>& layers);
  // Drops the pin; the layers go at the next Gc() unless something else holds them. Releasing
  // an unknown id is OK (release is retried after crashes).
  Status ReleaseLease(std::string_view lease_id);
  // Moves the pin held under `from_id` to `to_id`, replacing what `to_id` held (whose layers go
  // at the next Gc() unless something else holds them), in one step: a sandbox whose image
  // changed in place pinned its new image under a second id while it still ran on the old one.
  // NotFound when `from_id` holds nothing.
  Status MoveLease(std::string_view from_id, std::string_view to_id);
  std::vector<Lease> ListLeases() const;

  // Makes the image `name` from a sandbox's writable layer: the layers and config of the image
  // that the sandbox's lease `base_lease_id` pinned, plus one new layer copied from the
  // overlayfs upper directory `writable_fd` (CopyWritableLayer; the caller keeps it still, e.g.
  // with the sandbox frozen). The new layer is content-addressed like the others (an identical
  // copy is stored once); it and the record appear under one lock, so Gc never sees the layer
  // without the image. AlreadyExists when `name` is taken; NotFound for an unknown lease;
  // FailedPrecondition when the lease's image was replaced since (its config is gone).
  Result<ImageRecord> CommitImage(std::string_view name, std::string_view base_lease_id,
                                  int writable_fd, const CopyLayerOptions& options);

  // Removes layers no image or lease names, and staging directories of dead imports.
  Result<GcReport> Gc();

  // Layers this object unpacked since Open (a reimport or another importer's work is not
  // counted): what "unpacked exactly once" is checked against.
  uint64_t layers_unpacked() const { return layers_unpacked_.load(); }

  const std::string& root() const { return options_.root; }
  std::string LayerDir(const Digest& digest) const;  // the lower dir, whether present or not

 private:
  class Locked;
  explicit ImageStore(ImageStoreOptions options);
  Status Init();
  // Puts the blob of layer `index` into the layout being imported, just before it is unpacked
  // (a pull downloads it there). Called only for a layer the store lacks, under its lock.
  using FetchBlob = std::function<Status(size_t index, const Descriptor& layer)>;
  // What one import has done so far; shared by its layer workers under the record lock.
  struct ImportState {
    Staging* staging = nullptr;
    Lease pin;
    std::vector<Digest> unpacked_here;
  };
  Result<ImageRecord> ImportFromLayout(const OciLayout& layout, const ImportOptions& options,
                                       const std::string& source, const FetchBlob& fetch = {});
  // Makes layer `index` of `count` present in the store and pins it for the import.
  Status AddLayer(const OciLayout& layout, size_t index, size_t count, const Descriptor& layer,
                  const FetchBlob& fetch, const ImportOptions& options, const std::string& source,
                  ImportState& state);
  Status PinLocked(ImportState& state, const Digest& digest, bool unpacked_here);
  Result<ImageRecord> ReadImage(std::string_view normalized_name) const;
  Result<LayerRecord> ReadLayer(const Digest& digest) const;
  Result<Lease> ReadLease(std::string_view id) const;
  Result<ResolvedImage> ResolveRecord(ImageRecord record) const;
  Result<GcReport> GcLocked(Locked& lock, std::optional<Staging>& trash);
  size_t RemoveStaleStaging();
  std::string Now() const;
  // "<root>/<sub>"
  std::string Path(std::string_view sub) const;

  ImageStoreOptions options_;
  base::Clock* clock_;
  // Serialises record changes within this process; store.lock does it across processes.
  mutable std::mutex mu_;
  std::atomic<uint64_t> layers_unpacked_{0};
};

}  // namespace warren::image
