#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "image/digest.h"

// The OCI image-spec documents we read (index, manifest, config) as plain structs, and their
// parsers. Docker's v2 schema 2 media types are accepted as the same shapes. Parsers treat the
// text as untrusted: size and nesting are bounded, every field is type-checked, and errors name
// the field. Free functions; thread-safe.

namespace warren::image {

inline constexpr std::string_view kMediaTypeOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kMediaTypeOciManifest =
    "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kMediaTypeOciConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kMediaTypeOciLayerTar = "application/vnd.oci.image.layer.v1.tar";
inline constexpr std::string_view kMediaTypeOciLayerGzip =
    "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr std::string_view kMediaTypeOciLayerZstd =
    "application/vnd.oci.image.layer.v1.tar+zstd";
inline constexpr std::string_view kMediaTypeDockerManifest =
    "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view kMediaTypeDockerManifestList =
    "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kMediaTypeDockerConfig =
    "application/vnd.docker.container.image.v1+json";
inline constexpr std::string_view kMediaTypeDockerLayerGzip =
    "application/vnd.docker.image.rootfs.diff.tar.gzip";

// Annotation keys that name an image inside an index.
inline constexpr std::string_view kAnnotationRefName = "org.opencontainers.image.ref.name";
inline constexpr std::string_view kAnnotationContainerdName = "io.containerd.image.name";

// Size limits for the JSON documents (registries use 4 MiB for manifests).
inline constexpr size_t kMaxManifestBytes = 4 << 20;
inline constexpr size_t kMaxConfigBytes = 8 << 20;

struct Platform {
  std::string os;
  std::string architecture;
  std::string variant;
};

struct Descriptor {
  std::string media_type;
  Digest digest;
  int64_t size = 0;
  std::map<std::string, std::string> annotations;
  std::optional<Platform> platform;
};

struct Index {
  std::vector<Descriptor> manifests;
};

struct Manifest {
  std::string media_type;
  Descriptor config;
  std::vector<Descriptor> layers;  // bottom first
};

// What a sandbox needs from the image config (the "config" object of the OCI config).
struct ImageConfig {
  std::vector<std::string> env;  // "NAME=value"
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::string working_dir;
  std::string user;
  std::vector<std::string> exposed_ports;  // "8080/tcp"
  std::map<std::string, std::string> labels;
  std::string stop_signal;
  std::string os;
  std::string architecture;
  std::string created;
  std::vector<Digest> diff_ids;  // rootfs.diff_ids, bottom first

  friend bool operator==(const ImageConfig&, const ImageConfig&) = default;
};

enum class LayerCompression { kNone, kGzip, kZstd };

// The compression a layer media type declares; unknown or foreign (non-distributable URLs
// we cannot fetch) media types are InvalidArgument.
Result<LayerCompression> CompressionOfLayer(std::string_view media_type);

// True when `media_type` is an index/manifest-list type; false for a single manifest.
bool IsIndexMediaType(std::string_view media_type);
bool IsManifestMediaType(std::string_view media_type);

// Parsers. `what` names the document in error messages ("index.json", "manifest sha256:...").
Result<Index> ParseIndex(std::string_view json, std::string_view what);
Result<Manifest> ParseManifest(std::string_view json, std::string_view what);
Result<ImageConfig> ParseImageConfig(std::string_view json, std::string_view what);
// The mediaType field of a manifest or index document ("" when absent), for dispatch.
Result<std::string> PeekMediaType(std::string_view json, std::string_view what);

// Serialises an ImageConfig back to OCI config JSON (the store keeps it in its image records).
std::string ImageConfigToJson(const ImageConfig& config);

}  // namespace warren::image
