#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "image/oci.h"

namespace warren::image {

// One image chosen from a layout: its manifest, config and the name the layout gives it.
struct SelectedImage {
  Descriptor manifest_descriptor;
  Manifest manifest;
  Descriptor config_descriptor;
  ImageConfig config;
  // "base:latest" from the io.containerd.image.name or a full org.opencontainers.image.ref.name
  // annotation; empty when the layout does not name the image.
  std::string name_hint;
};

// An OCI image layout directory (oci-layout, index.json, blobs/sha256/<hex>) opened for reading.
// Every blob read is checked against its descriptor's digest and size; blob names come only from
// parsed digests, so a layout cannot point the reader outside blobs/. Owns the directory fd.
// Immutable after Open; safe to share between threads.
class OciLayout {
 public:
  static Result<OciLayout> Open(const std::string& dir);

  // Chooses the image to import. With `want` (a name or tag), the manifest whose ref-name or
  // containerd-name annotation matches it; otherwise the only image in the layout, or the
  // linux/amd64 one of a multi-platform index. Nested indexes are followed (depth 4).
  Result<SelectedImage> Select(std::string_view want) const;

  // A small blob read whole and verified (manifests, configs).
  Result<std::string> ReadBlob(const Descriptor& descriptor, size_t max_bytes) const;
  // A blob opened for streaming; the caller verifies the digest while reading.
  Result<base::UniqueFd> OpenBlob(const Digest& digest) const;

  const std::string& path() const { return path_; }

 private:
  OciLayout(std::string path, base::UniqueFd dir) : path_(std::move(path)), dir_(std::move(dir)) {}
  Result<SelectedImage> Load(const Descriptor& manifest, std::string name_hint) const;

  std::string path_;
  base::UniqueFd dir_;
};

}  // namespace warren::image
