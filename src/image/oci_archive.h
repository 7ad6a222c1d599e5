#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace warren::image {

// Extracts a tarball of an OCI image layout (what `docker save` and `skopeo copy oci-archive:`
// write; plain, gzip or zstd) into the empty directory `dest_fd`. Only the layout's own files
// are taken (oci-layout, index.json, blobs/sha256/<64 hex>), as regular files; anything else
// is skipped and nothing is written outside dest_fd. More than `max_bytes` in total is
// ResourceExhausted. Blob contents are not verified here: the layout reader does that.
Status ExtractLayoutArchive(const std::string& tar_path, int dest_fd, uint64_t max_bytes);

}  // namespace warren::image
