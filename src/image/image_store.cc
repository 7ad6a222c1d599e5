#include "image/image_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "base/dir_names.h"
#include "base/encoding.h"
#include "base/ids.h"
#include "base/scope_guard.h"
#include "base/time_format.h"
#include "image/file_lock.h"
#include "image/logger.h"
#include "image/oci_archive.h"
#include "image/oci_layout.h"
#include "image/records.h"
#include "image/reference.h"
#include "image/registry_client.h"
#include "image/safe_fs.h"
#include "image/staging.h"

namespace warren::image {
namespace {

constexpr size_t kMaxRecordBytes = 16 << 20;
constexpr size_t kMaxLeaseIdBytes = 256;
constexpr std::string_view kImportLeasePrefix = "import:";
// A layer copied from a directory tree (CommitImage), not unpacked from a blob.
constexpr std::string_view kCommittedLayerMediaType = "application/vnd.warren.layer.v1.dir";
// An archive is extracted to staging before import; bound it like a layer set.
constexpr uint64_t kMaxArchiveBytes = uint64_t{64} << 30;

std::string RecordFileName(std::string_view key) { return base::Sha256Hex(key) + ".json"; }

Status CheckLeaseId(std::string_view id) {
  if (id.empty() || id.size() > kMaxLeaseIdBytes) {
    return InvalidArgumentError(fmt::format("lease id must be 1 to {} bytes", kMaxLeaseIdBytes));
  }
  if (id.starts_with(kImportLeasePrefix)) {
    return InvalidArgumentError(
        fmt::format("lease ids starting with '{}' are the store's own", kImportLeasePrefix));
  }
  return Status::Ok();
}

Status MakeDir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return ErrnoError(fmt::format("mkdir '{}'", path), errno);
  }
  return Status::Ok();
}

// Hands progress to the caller one report at a time: a pull works on several layers at once.
class ProgressSink {
 public:
  explicit ProgressSink(const std::function<void(const PullProgress&)>& report) : report_(report) {}
  void Report(const PullProgress& p) {
    if (!report_) return;
    std::lock_guard lock(mu_);
    report_(p);
  }

 private:
  const std::function<void(const PullProgress&)>& report_;
  std::mutex mu_;
};

}  // namespace

// Holds the store's record lock: the in-process mutex, then the flock on store.lock.
class ImageStore::Locked {
 public:
  static Result<std::unique_ptr<Locked>> Take(const ImageStore& store) {
    auto locked = std::unique_ptr<Locked>(new Locked(store.mu_));
    ASSIGN_OR_RETURN(locked->file_, FileLock::Acquire(store.Path("store.lock")));
    return locked;
  }

 private:
  explicit Locked(std::mutex& mu) : guard_(mu) {}
  std::unique_lock<std::mutex> guard_;
  FileLock file_;
};

std::string ResolvedImage::OverlayLowerDirs() const {
  std::string out;
  for (auto it = lower_dirs.rbegin(); it != lower_dirs.rend(); ++it) {
    if (!out.empty()) out.push_back(':');
    out += *it;
  }
  return out;
}

ImageStore::ImageStore(ImageStoreOptions options)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : &base::RealClock()) {}

ImageStore::~ImageStore() = default;

Result<std::unique_ptr<ImageStore>> ImageStore::Open(ImageStoreOptions options) {
  if (options.root.empty()) return InvalidArgumentError("image store root is empty");
  while (options.root.size() > 1 && options.root.back() == '/') options.root.pop_back();
  auto store = std::unique_ptr<ImageStore>(new ImageStore(std::move(options)));
  RETURN_IF_ERROR(store->Init());
  return store;
}

std::string ImageStore::Path(std::string_view sub) const {
  return fmt::format("{}/{}", options_.root, sub);
}

std::string ImageStore::LayerDir(const Digest& digest) const {
  return Path("layers/sha256/" + digest.hex() + "/rootfs");
}

std::string ImageStore::Now() const { return base::FormatRfc3339(clock_->Now()); }

Status ImageStore::Init() {
  // The root is private: layers hold setuid binaries that host users must not reach.
  std::error_code ec;
  std::filesystem::create_directories(options_.root, ec);
  if (ec) return InternalError(fmt::format("creating '{}': {}", options_.root, ec.message()));
  if (chmod(options_.root.c_str(), 0700) != 0) {
    return ErrnoError(fmt::format("chmod '{}'", options_.root), errno);
  }
  for (const char* sub : {"layers", "layers/sha256", "images", "leases", "staging", "locks"}) {
    RETURN_IF_ERROR(MakeDir(Path(sub), 0700));
  }
  size_t stale = RemoveStaleStaging();
  if (stale > 0) Log()->info("removed stale staging dirs root={} count={}", options_.root, stale);
  return Status::Ok();
}

size_t ImageStore::RemoveStaleStaging() {
  size_t removed = 0;
  std::string staging = Path("staging");
  for (const auto& name : base::DirNames(staging)) {
    if (name.ends_with(".lock")) continue;
    // A live import holds <id>.lock; only the remains of a dead one can be locked here.
    auto lock = FileLock::TryAcquire(staging + "/" + name + ".lock", /*remove_on_release=*/true);
    if (!lock.ok()) continue;
    Status s = RemoveTree(staging + "/" + name);
    if (!s.ok()) {
      Log()->warn("removing stale staging failed dir={} error={}", name, s.ToString());
      continue;
    }
    ++removed;
  }
  // Lock files whose directory is gone.
  for (const auto& name : base::DirNames(staging)) {
    if (!name.ends_with(".lock")) continue;
    std::string dir = staging + "/" + name.substr(0, name.size() - 5);
    if (access(dir.c_str(), F_OK) == 0) continue;
    auto lock = FileLock::TryAcquire(staging + "/" + name, /*remove_on_release=*/true);
    (void)lock;  // Released (and unlinked) at once when it was free.
  }
  return removed;
}

Result<ImageRecord> ImageStore::Import(const std::string& path, const ImportOptions& options) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return ErrnoError(fmt::format("import '{}'", path), errno);
  if (S_ISDIR(st.st_mode)) return ImportLayout(path, options);
  return ImportArchive(path, options);
}

Result<ImageRecord> ImageStore::ImportLayout(const std::string& dir, const ImportOptions& options) {
  ASSIGN_OR_RETURN(OciLayout layout, OciLayout::Open(dir));
  return ImportFromLayout(layout, options, dir);
}

Result<ImageRecord> ImageStore::ImportArchive(const std::string& tar_path,
                                              const ImportOptions& options) {
  ASSIGN_OR_RETURN(Staging staging, Staging::Create(Path("staging")));
  std::string layout_dir = staging.dir() + "/layout";
  RETURN_IF_ERROR(MakeDir(layout_dir, 0700));
  base::UniqueFd fd(open(layout_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open staging", errno);
  RETURN_IF_ERROR(ExtractLayoutArchive(tar_path, fd.get(), kMaxArchiveBytes));
  auto layout = OciLayout::Open(layout_dir);
  if (!layout.ok()) {
    return InvalidArgumentError(
        fmt::format("'{}' is not a tarball of an OCI image layout (no index.json)", tar_path));
  }
  return ImportFromLayout(*layout, options, tar_path);
}

Result<ImageRecord> ImageStore::Pull(std::string_view reference, const ImportOptions& options) {
  ASSIGN_OR_RETURN(ImageRef ref, ParseImageRef(reference));
  size_t slash = ref.repository.find('/');
  if (slash == std::string::npos) {
    return InvalidArgumentError(
        fmt::format("'{}' names no registry; pull host:port/repository:tag", ref.ToString()));
  }
  std::string registry = ref.repository.substr(0, slash);
  std::string repository = ref.repository.substr(slash + 1);
  if (!options_.allowed_registries.AllowsRegistry(registry)) {
    return PermissionDeniedError(fmt::format(
        "pulling {}: registry {} is not allowed on this node (allowed: {}; the operator lists "
        "registries with --allowed-registries)",
        ref.ToString(), registry, options_.allowed_registries.ToString()));
  }
  RegistryClient::Options client_options;
  client_options.allowed = options_.allowed_registries;
  client_options.deadline = options.deadline;
  client_options.cancel = options.cancel;
  RegistryClient client(registry, client_options);
  ASSIGN_OR_RETURN(FetchedManifest top, client.GetManifest(repository, ref.tag));

  ASSIGN_OR_RETURN(Staging staging, Staging::Create(Path("staging")));
  std::string dir = staging.dir() + "/layout";
  std::string blobs = dir + "/blobs/sha256";
  std::error_code ec;
  std::filesystem::create_directories(blobs, ec);
  if (ec) return InternalError(fmt::format("mkdir '{}': {}", blobs, ec.message()));

  FetchedManifest manifest = std::move(top);
  if (IsIndexMediaType(manifest.media_type)) {
    ASSIGN_OR_RETURN(Index index, ParseIndex(manifest.body, "index of " + ref.ToString()));
    const Descriptor* chosen = nullptr;
    for (const auto& d : index.manifests) {
      bool host = d.platform && d.platform->os == "linux" && d.platform->architecture == "amd64";
      if (host || index.manifests.size() == 1) {
        chosen = &d;
        break;
      }
    }
    if (chosen == nullptr) {
      return NotFoundError(fmt::format("{} has no linux/amd64 image", ref.ToString()));
    }
    ASSIGN_OR_RETURN(manifest, client.GetManifest(repository, chosen->digest.ToString()));
  }
  if (!IsManifestMediaType(manifest.media_type)) {
    return InvalidArgumentError(
        fmt::format("{} is a '{}', not an image manifest", ref.ToString(), manifest.media_type));
  }
  RETURN_IF_ERROR(WriteFileAtomic(blobs, manifest.digest.hex(), manifest.body));
  ASSIGN_OR_RETURN(Manifest parsed, ParseManifest(manifest.body, "manifest of " + ref.ToString()));
  ASSIGN_OR_RETURN(std::string config, client.GetBlob(repository, parsed.config, kMaxConfigBytes));
  RETURN_IF_ERROR(WriteFileAtomic(blobs, parsed.config.digest.hex(), config));
  nlohmann::json index = {
      {"schemaVersion", 2},
      {"manifests", nlohmann::json::array({{{"mediaType", manifest.media_type},
                                            {"digest", manifest.digest.ToString()},
                                            {"size", manifest.body.size()}}})}};
  RETURN_IF_ERROR(WriteFileAtomic(dir, "index.json", index.dump()));

  // Each missing layer is downloaded by the worker that then unpacks it, under the layer's
  // lock: a concurrent pull of the same layer (another thread or process) waits and finds it
  // unpacked instead of fetching it again. The blob goes to a temporary name and is renamed to
  // its digest only once every byte is verified, so nothing ever reads part of one.
  ProgressSink progress(options.on_pull_progress);
  FetchBlob fetch = [&](size_t i, const Descriptor& layer) -> Status {
    std::string path = blobs + "/" + layer.digest.hex();
    if (access(path.c_str(), F_OK) == 0) return Status::Ok();  // listed twice
    progress.Report({.step = PullProgress::Step::kLayerDownloading,
                     .layer = i + 1,
                     .layers = parsed.layers.size(),
                     .digest = layer.digest,
                     .bytes = layer.size});
    auto started = std::chrono::steady_clock::now();
    std::string partial = path + ".partial";
    auto last = started;
    auto on_bytes = [&](uint64_t done) {
      auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::milliseconds(100)) return;
      last = now;
      progress.Report({.step = PullProgress::Step::kLayerBytes,
                       .layer = i + 1,
                       .layers = parsed.layers.size(),
                       .digest = layer.digest,
                       .bytes = layer.size,
                       .done = static_cast<int64_t>(done)});
    };
    RETURN_IF_ERROR(client.DownloadBlob(repository, layer, partial, on_bytes));
    if (rename(partial.c_str(), path.c_str()) != 0) {
      int err = errno;
      unlink(partial.c_str());
      return ErrnoError(fmt::format("keeping layer {}", layer.digest.ToString()), err);
    }
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    progress.Report({.step = PullProgress::Step::kLayerDownloaded,
                     .layer = i + 1,
                     .layers = parsed.layers.size(),
                     .digest = layer.digest,
                     .bytes = layer.size,
                     .done = layer.size,
                     .took = took});
    Log()->info("layer downloaded digest={} bytes={} ms={}", layer.digest.Short(), layer.size,
                took.count());
    return Status::Ok();
  };
  ImportOptions import_options = options;
  if (import_options.name.empty()) import_options.name = ref.ToString();
  import_options.on_pull_progress = [&progress](const PullProgress& p) { progress.Report(p); };
  ASSIGN_OR_RETURN(OciLayout layout, OciLayout::Open(dir));
  return ImportFromLayout(layout, import_options, "http://" + registry + "/" + repository, fetch);
}

Result<ImageRecord> ImageStore::ImportFromLayout(const OciLayout& layout,
                                                 const ImportOptions& options,
                                                 const std::string& source,
                                                 const FetchBlob& fetch) {
  auto started = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(SelectedImage selected, layout.Select(options.name));
  std::string name_text = options.name.empty() ? selected.name_hint : options.name;
  if (name_text.empty()) {
    return InvalidArgumentError(
        fmt::format("'{}' does not name its image; give the import a name", source));
  }
  ASSIGN_OR_RETURN(ImageRef ref, ParseImageRef(name_text));
  if (!selected.config.os.empty() && selected.config.os != "linux") {
    return InvalidArgumentError(
        fmt::format("image '{}' is for os '{}', not linux", ref.ToString(), selected.config.os));
  }

  // While this import runs, the layers it has are pinned by a lease named after its staging
  // directory: Gc() keeps them, and drops the lease if the import dies.
  ASSIGN_OR_RETURN(Staging staging, Staging::Create(Path("staging")));
  ImportState state;
  state.staging = &staging;
  state.pin.id = std::string(kImportLeasePrefix) + staging.id();
  state.pin.created_at = Now();
  bool pinned = true;
  auto drop_pin = [&] {
    if (!std::exchange(pinned, false)) return;
    auto locked = Locked::Take(*this);
    if (locked.ok()) unlink(Path("leases/" + RecordFileName(state.pin.id)).c_str());
  };
  auto drop_pin_at_exit = base::ScopeExit([&] { drop_pin(); });

  // A failed import takes back the layers it unpacked that nothing else holds.
  auto collect_on_failure = base::ScopeExit([&] {
    if (state.unpacked_here.empty()) return;
    drop_pin();
    auto report = Gc();
    if (!report.ok()) Log()->warn("gc after a failed import: {}", report.status().ToString());
  });

  ImageRecord record;
  record.name = ref.ToString();
  record.manifest_digest = selected.manifest_descriptor.digest;
  record.config_digest = selected.config_descriptor.digest;
  record.config = selected.config;
  record.source = source;
  for (const auto& layer : selected.manifest.layers) {
    record.layers.push_back(layer.digest);
    record.compressed_size += layer.size;
  }

  // Layers are independent until the record names them all: several are fetched and unpacked
  // at once. The first failure stops workers from starting more; the lowest-numbered failure is
  // the one reported, so the error does not depend on scheduling.
  const auto& layers = selected.manifest.layers;
  std::vector<Status> results(layers.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < layers.size() && !failed.load(); i = next.fetch_add(1)) {
      results[i] = AddLayer(layout, i, layers.size(), layers[i], fetch, options, source, state);
      if (!results[i].ok()) failed.store(true);
    }
  };
  size_t parallel =
      std::clamp<size_t>(options.layer_parallelism, 1, std::max<size_t>(1, layers.size()));
  {
    std::vector<std::jthread> workers;
    for (size_t w = 1; w < parallel; ++w) workers.emplace_back(work);
    work();
  }
  for (const auto& r : results) RETURN_IF_ERROR(r);

  {
    ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
    record.imported_at = Now();
    RETURN_IF_ERROR(
        WriteFileAtomic(Path("images"), RecordFileName(record.name), ImageRecordToJson(record)));
  }
  collect_on_failure.Dismiss();
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  Log()->info("image imported name={} manifest={} layers={} ms={:.0f}", record.name,
              record.manifest_digest.Short(), record.layers.size(), ms);
  return record;
}

Status ImageStore::PinLocked(ImportState& state, const Digest& digest, bool unpacked_here) {
  if (unpacked_here) state.unpacked_here.push_back(digest);
  state.pin.layers.push_back(digest);
  return WriteFileAtomic(Path("leases"), RecordFileName(state.pin.id), LeaseToJson(state.pin));
}

Status ImageStore::AddLayer(const OciLayout& layout, size_t index, size_t count,
                            const Descriptor& layer, const FetchBlob& fetch,
                            const ImportOptions& options, const std::string& source,
                            ImportState& state) {
  auto tell = [&](PullProgress::Step step) {
    if (!fetch || !options.on_pull_progress) return;
    options.on_pull_progress({.step = step,
                              .layer = index + 1,
                              .layers = count,
                              .digest = layer.digest,
                              .bytes = layer.size,
                              .done = layer.size});
  };
  // Pin what is already here; otherwise fetch (a pull) and unpack under the layer's own lock
  // (one unpacker per layer across threads and processes), move it in and pin it.
  {
    ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
    if (ReadLayer(layer.digest).ok()) {
      RETURN_IF_ERROR(PinLocked(state, layer.digest, false));
      if (fetch) tell(PullProgress::Step::kLayerPresent);
      return Status::Ok();
    }
  }
  ASSIGN_OR_RETURN(FileLock layer_lock,
                   FileLock::Acquire(Path("locks/" + layer.digest.hex() + ".lock"),
                                     /*remove_on_release=*/true));
  {
    ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
    if (ReadLayer(layer.digest).ok()) {  // Another importer finished it while we waited.
      RETURN_IF_ERROR(PinLocked(state, layer.digest, false));
      if (fetch) tell(PullProgress::Step::kLayerPresent);
      return Status::Ok();
    }
  }
  if (fetch) RETURN_IF_ERROR(fetch(index, layer));
  tell(PullProgress::Step::kUnpacking);
  std::string layer_stage = state.staging->dir() + "/" + layer.digest.hex();
  RETURN_IF_ERROR(MakeDir(layer_stage, 0755));
  RETURN_IF_ERROR(MakeDir(layer_stage + "/rootfs", 0755));
  base::UniqueFd rootfs(
      open((layer_stage + "/rootfs").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!rootfs.valid()) return ErrnoError("open staging rootfs", errno);
  ASSIGN_OR_RETURN(base::UniqueFd blob, layout.OpenBlob(layer.digest));
  auto unpack_started = std::chrono::steady_clock::now();
  auto stats =
      UnpackLayerBlob(blob.get(), {layer.digest, layer.size}, rootfs.get(), options_.unpack);
  if (!stats.ok()) {
    Log()->warn("layer rejected digest={} source={} error={}", layer.digest.ToString(), source,
                stats.status().ToString());
    return stats.status();
  }
  LayerRecord layer_record;
  layer_record.digest = layer.digest;
  layer_record.media_type = layer.media_type;
  layer_record.compressed_size = layer.size;
  layer_record.unpacked_bytes = stats->bytes;
  layer_record.entries = stats->entries;
  layer_record.unpacked_at = Now();
  RETURN_IF_ERROR(WriteFileAtomic(layer_stage, "layer.json", LayerRecordToJson(layer_record)));
  {
    ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
    std::string final_dir = Path("layers/sha256/" + layer.digest.hex());
    if (rename(layer_stage.c_str(), final_dir.c_str()) != 0) {
      return ErrnoError(fmt::format("moving layer {} into the store", layer.digest.ToString()),
                        errno);
    }
    RETURN_IF_ERROR(PinLocked(state, layer.digest, true));
  }
  layers_unpacked_.fetch_add(1);
  tell(PullProgress::Step::kLayerUnpacked);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - unpack_started)
          .count();
  Log()->info("layer unpacked digest={} entries={} bytes={} ms={:.0f}", layer.digest.Short(),
              stats->entries, stats->bytes, ms);
  return Status::Ok();
}

Result<ImageRecord> ImageStore::ReadImage(std::string_view normalized_name) const {
  base::UniqueFd dir(open(Path("images").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return ErrnoError("open images", errno);
  auto text = ReadFileLimited(dir.get(), RecordFileName(normalized_name), kMaxRecordBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return NotFoundError(fmt::format("image '{}' not found", normalized_name));
    }
    return text.status();
  }
  return ImageRecordFromJson(*text, fmt::format("image '{}'", normalized_name));
}

Result<LayerRecord> ImageStore::ReadLayer(const Digest& digest) const {
  std::string dir = Path("layers/sha256/" + digest.hex());
  base::UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return NotFoundError(fmt::format("layer {} not found", digest.ToString()));
    return ErrnoError(fmt::format("open layer {}", digest.ToString()), errno);
  }
  ASSIGN_OR_RETURN(std::string text, ReadFileLimited(fd.get(), "layer.json", kMaxRecordBytes));
  ASSIGN_OR_RETURN(LayerRecord record, LayerRecordFromJson(text, "layer " + digest.ToString()));
  record.dir = dir + "/rootfs";
  return record;
}

Result<Lease> ImageStore::ReadLease(std::string_view id) const {
  base::UniqueFd dir(open(Path("leases").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return ErrnoError("open leases", errno);
  auto text = ReadFileLimited(dir.get(), RecordFileName(id), kMaxRecordBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return NotFoundError(fmt::format("lease '{}' not found", PrintablePath(id)));
    }
    return text.status();
  }
  return LeaseFromJson(*text, fmt::format("lease '{}'", PrintablePath(id)));
}

Result<ImageRecord> ImageStore::Get(std::string_view name) const {
  ASSIGN_OR_RETURN(ImageRef ref, ParseImageRef(name));
  return ReadImage(ref.ToString());
}

Result<ResolvedImage> ImageStore::ResolveRecord(ImageRecord record) const {
  ResolvedImage out;
  // The same layer listed twice (old builders repeat the empty layer) is stacked once, at its
  // top-most position: overlayfs refuses one directory as two layers.
  std::set<Digest> seen;
  for (auto it = record.layers.rbegin(); it != record.layers.rend(); ++it) {
    if (!seen.insert(*it).second) continue;
    std::string dir = LayerDir(*it);
    if (access(dir.c_str(), F_OK) != 0) {
      return DataLossError(fmt::format("layer {} of image '{}' is missing from the store",
                                       it->ToString(), record.name));
    }
    out.lower_dirs.push_back(std::move(dir));
  }
  std::reverse(out.lower_dirs.begin(), out.lower_dirs.end());
  out.image = std::move(record);
  return out;
}

Result<ResolvedImage> ImageStore::Resolve(std::string_view name) const {
  ASSIGN_OR_RETURN(ImageRecord record, Get(name));
  return ResolveRecord(std::move(record));
}

std::vector<ImageRecord> ImageStore::List() const {
  std::vector<ImageRecord> out;
  base::UniqueFd dir(open(Path("images").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return out;
  for (const auto& name : base::DirNames(Path("images"))) {
    if (!name.ends_with(".json") || name.starts_with(".")) continue;
    auto text = ReadFileLimited(dir.get(), name, kMaxRecordBytes);
    if (!text.ok()) continue;  // Removed while we listed.
    auto record = ImageRecordFromJson(*text, name);
    if (!record.ok()) {
      Log()->warn("skipping damaged image record file={} error={}", name,
                  record.status().ToString());
      continue;
    }
    out.push_back(std::move(record).value());
  }
  std::sort(out.begin(), out.end(),
            [](const ImageRecord& a, const ImageRecord& b) { return a.name < b.name; });
  return out;
}

std::vector<LayerRecord> ImageStore::ListLayers() const {
  std::vector<LayerRecord> out;
  for (const auto& hex : base::DirNames(Path("layers/sha256"))) {
    auto digest = Digest::Parse("sha256:" + hex);
    if (!digest.ok()) continue;
    auto record = ReadLayer(*digest);
    if (record.ok()) out.push_back(std::move(record).value());
  }
  return out;
}

std::vector<Lease> ImageStore::ListLeases() const {
  std::vector<Lease> out;
  base::UniqueFd dir(open(Path("leases").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return out;
  for (const auto& name : base::DirNames(Path("leases"))) {
    if (!name.ends_with(".json") || name.starts_with(".")) continue;
    auto text = ReadFileLimited(dir.get(), name, kMaxRecordBytes);
    if (!text.ok()) continue;
    auto lease = LeaseFromJson(*text, name);
    if (lease.ok()) out.push_back(std::move(lease).value());
  }
  std::sort(out.begin(), out.end(), [](const Lease& a, const Lease& b) { return a.id < b.id; });
  return out;
}

Result<GcReport> ImageStore::Remove(std::string_view name) {
  ASSIGN_OR_RETURN(ImageRef ref, ParseImageRef(name));
  ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
  std::string file = Path("images/" + RecordFileName(ref.ToString()));
  if (unlink(file.c_str()) != 0) {
    if (errno == ENOENT) return NotFoundError(fmt::format("image '{}' not found", ref.ToString()));
    return ErrnoError(fmt::format("removing image '{}'", ref.ToString()), errno);
  }
  Log()->info("image removed name={}", ref.ToString());
  std::optional<Staging> trash;
  auto report = GcLocked(*locked, trash);
  locked.reset();
  return report;  // `trash` deletes the collected layers after the lock is released.
}

Result<ResolvedImage> ImageStore::AcquireLease(std::string_view lease_id, std::string_view image,
                                               LeaseLife life) {
  RETURN_IF_ERROR(CheckLeaseId(lease_id));
  ASSIGN_OR_RETURN(ImageRef ref, ParseImageRef(image));
  ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
  ASSIGN_OR_RETURN(ImageRecord record, ReadImage(ref.ToString()));
  ASSIGN_OR_RETURN(ResolvedImage resolved, ResolveRecord(record));
  auto existing = ReadLease(lease_id);
  if (existing.ok()) {
    if (existing->image == record.name && existing->layers == record.layers) return resolved;
    return AlreadyExistsError(
        fmt::format("lease '{}' is held for image '{}'", PrintablePath(lease_id), existing->image));
  }
  if (existing.status().code() != StatusCode::kNotFound) return existing.status();
  Lease lease;
  lease.id = std::string(lease_id);
  lease.image = record.name;
  lease.layers = record.layers;
  lease.created_at = Now();
  RETURN_IF_ERROR(WriteFileAtomic(Path("leases"), RecordFileName(lease.id), LeaseToJson(lease),
                                  /*durable=*/life == LeaseLife::kDurable));
  return resolved;
}

Result<Lease> ImageStore::AcquireLayerLease(std::string_view lease_id,
                                            const std::vector<Digest>& layers) {
  RETURN_IF_ERROR(CheckLeaseId(lease_id));
  ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
  for (const auto& d : layers) {
    if (access(LayerDir(d).c_str(), F_OK) != 0) {
      return NotFoundError(fmt::format("layer {} is not in the store", d.ToString()));
    }
  }
  auto existing = ReadLease(lease_id);
  if (existing.ok()) {
    if (existing->image.empty() && existing->layers == layers) return *existing;
    return AlreadyExistsError(
        fmt::format("lease '{}' is held for other layers", PrintablePath(lease_id)));
  }
  if (existing.status().code() != StatusCode::kNotFound) return existing.status();
  Lease lease;
  lease.id = std::string(lease_id);
  lease.layers = layers;
  lease.created_at = Now();
  RETURN_IF_ERROR(WriteFileAtomic(Path("leases"), RecordFileName(lease.id), LeaseToJson(lease)));
  return lease;
}

Status ImageStore::ReleaseLease(std::string_view lease_id) {
  ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
  std::string file = Path("leases/" + RecordFileName(lease_id));
  if (unlink(file.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError(fmt::format("releasing lease '{}'", PrintablePath(lease_id)), errno);
  }
  return Status::Ok();
}

Status ImageStore::MoveLease(std::string_view from_id, std::string_view to_id) {
  RETURN_IF_ERROR(CheckLeaseId(to_id));
  ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
  ASSIGN_OR_RETURN(Lease lease, ReadLease(from_id));
  lease.id = std::string(to_id);
  RETURN_IF_ERROR(WriteFileAtomic(Path("leases"), RecordFileName(lease.id), LeaseToJson(lease)));
  std::string from = Path("leases/" + RecordFileName(from_id));
  if (unlink(from.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError(fmt::format("releasing lease '{}'", PrintablePath(from_id)), errno);
  }
  return Status::Ok();
}

Result<ImageRecord> ImageStore::CommitImage(std::string_view name, std::string_view base_lease_id,
                                            int writable_fd, const CopyLayerOptions& options) {
  auto started = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(ImageRef ref, ParseImageRef(name));
  ImageRecord base;
  {
    ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
    if (ReadImage(ref.ToString()).ok()) {
      return AlreadyExistsError(fmt::format("image '{}' already exists", ref.ToString()));
    }
    ASSIGN_OR_RETURN(Lease lease, ReadLease(base_lease_id));
    auto image = ReadImage(lease.image);
    if (!image.ok() || image->layers != lease.layers) {
      return FailedPreconditionError(fmt::format(
          "image '{}' was removed or replaced since the sandbox started on it; its config is "
          "gone",
          lease.image));
    }
    base = std::move(image).value();
  }
  // The copy runs without the store lock (it may take seconds); the base layers stay pinned
  // by the sandbox's lease meanwhile.
  ASSIGN_OR_RETURN(Staging staging, Staging::Create(Path("staging")));
  const std::string stage = staging.dir() + "/layer";
  RETURN_IF_ERROR(MakeDir(stage, 0755));
  RETURN_IF_ERROR(MakeDir(stage + "/rootfs", 0755));
  base::UniqueFd rootfs(open((stage + "/rootfs").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!rootfs.valid()) return ErrnoError("open staging rootfs", errno);
  ASSIGN_OR_RETURN(CopiedLayer copied, CopyWritableLayer(writable_fd, rootfs.get(), options));
  // The record written below is durable; the files it names must be before it, or a host crash
  // leaves a snapshot whose layer is missing what it recorded.
  if (syncfs(rootfs.get()) != 0) return ErrnoError("sync the committed layer", errno);
  LayerRecord layer;
  layer.digest = copied.digest;
  layer.media_type = std::string(kCommittedLayerMediaType);
  layer.unpacked_bytes = copied.bytes;
  layer.entries = copied.entries;
  layer.unpacked_at = Now();
  RETURN_IF_ERROR(WriteFileAtomic(stage, "layer.json", LayerRecordToJson(layer)));

  ImageRecord record;
  record.name = ref.ToString();
  record.manifest_digest = copied.digest;
  record.config_digest = base.config_digest;
  record.layers = base.layers;
  record.layers.push_back(copied.digest);
  record.config = base.config;
  record.compressed_size = base.compressed_size;
  record.source = "commit of a sandbox on '" + base.name + "'";
  {
    ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
    if (ReadImage(record.name).ok()) {
      return AlreadyExistsError(fmt::format("image '{}' already exists", record.name));
    }
    if (!ReadLayer(copied.digest).ok()) {
      std::string final_dir = Path("layers/sha256/" + copied.digest.hex());
      if (rename(stage.c_str(), final_dir.c_str()) != 0) {
        return ErrnoError(fmt::format("moving layer {} into the store", copied.digest.ToString()),
                          errno);
      }
    }  // else an identical layer is here already: the copy goes with the staging dir
    record.imported_at = Now();
    RETURN_IF_ERROR(
        WriteFileAtomic(Path("images"), RecordFileName(record.name), ImageRecordToJson(record)));
  }
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  Log()->info("image committed name={} base={} layer={} entries={} bytes={} ms={:.1f}", record.name,
              base.name, copied.digest.Short(), copied.entries, copied.bytes, ms);
  return record;
}

Result<GcReport> ImageStore::Gc() {
  ASSIGN_OR_RETURN(auto locked, Locked::Take(*this));
  std::optional<Staging> trash;
  auto report = GcLocked(*locked, trash);
  locked.reset();
  return report;  // `trash` deletes the collected layers after the lock is released.
}

Result<GcReport> ImageStore::GcLocked(Locked& locked, std::optional<Staging>& trash) {
  GcReport report;
  std::set<Digest> live;
  for (const auto& image : List()) live.insert(image.layers.begin(), image.layers.end());
  for (const auto& lease : ListLeases()) {
    if (lease.id.starts_with(kImportLeasePrefix)) {
      // The pin of an import: live while its staging lock is held.
      std::string staging_id = lease.id.substr(kImportLeasePrefix.size());
      if (staging_id.find('/') == std::string::npos) {
        auto lock = FileLock::TryAcquire(Path("staging/" + staging_id + ".lock"), true);
        if (lock.ok()) {
          unlink(Path("leases/" + RecordFileName(lease.id)).c_str());
          continue;
        }
      }
    }
    live.insert(lease.layers.begin(), lease.layers.end());
  }

  // Move the dead layers out under the lock; delete them after it is released.
  std::vector<LayerRecord> dead;
  for (auto& layer : ListLayers()) {
    if (!live.contains(layer.digest)) dead.push_back(std::move(layer));
  }
  // Layer directories without a readable record (damaged) are left for an operator.
  if (!dead.empty()) {
    ASSIGN_OR_RETURN(Staging s, Staging::Create(Path("staging")));
    trash.emplace(std::move(s));
    for (const auto& layer : dead) {
      std::string from = Path("layers/sha256/" + layer.digest.hex());
      std::string to = trash->dir() + "/" + layer.digest.hex();
      if (rename(from.c_str(), to.c_str()) != 0) {
        return ErrnoError(fmt::format("collecting layer {}", layer.digest.ToString()), errno);
      }
      report.removed_layers.push_back(layer.digest);
      report.freed_bytes += layer.unpacked_bytes;
      Log()->info("layer collected digest={} bytes={}", layer.digest.Short(), layer.unpacked_bytes);
    }
  }
  (void)locked;
  report.stale_staging_removed = RemoveStaleStaging();
  return report;
}

}  // namespace warren::image
