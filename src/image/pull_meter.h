#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/image_store.h"

namespace warren::image {

// The whole of one pull, from its per-layer steps (PullProgress): what a progress bar and an
// ImagePullJob's status show. Bytes are the compressed sizes the manifest gives; a layer
// already in the store counts as fetched. Not thread-safe (Pull reports one step at a time).
class PullMeter {
 public:
  void Add(const PullProgress& p);

  size_t layers() const { return size_.size(); }
  size_t layers_done() const;  // present or unpacked
  int64_t bytes_total() const;
  int64_t bytes_done() const;
  // 0–100 by bytes; 100 only once every layer is in the store (unpacking is the last step).
  int percent() const;
  // "[##########..........]  50% 12.0 MiB/24.0 MiB, 1/3 layers", `width` cells of bar.
  std::string Bar(size_t width = 24) const;

 private:
  void Grow(size_t layers);
  std::vector<int64_t> size_;
  std::vector<int64_t> done_;
  std::vector<bool> finished_;
};

}  // namespace warren::image
