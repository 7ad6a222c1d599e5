#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "image/image_store.h"

// The images the project builds itself (scripts/images/, run by scripts/setup.d/10-images) are
// cached as OCI layouts under <cache>/<recipe>/oci. The node agent calls ImportBuiltinImages at
// start so `base` and `busybox` are in its store; tests call it to get real images.

namespace warren::image {

inline constexpr char kDefaultImageCacheDir[] = "/var/cache/warren/images";
// The recipes, as the setup step names them; each becomes the image "<recipe>:latest".
inline constexpr const char* kBuiltinRecipes[] = {"busybox", "base"};

// "base", "base:latest": a name that an import at start may still replace with a newer build.
bool IsBuiltinImageName(std::string_view name);

// $WARREN_IMAGE_CACHE if set (the setup step honours it too), else kDefaultImageCacheDir.
std::string DefaultImageCacheDir();

struct BuiltinImageResult {
  std::string name;    // "base:latest"
  std::string action;  // "imported", "current" (already in the store), "missing" (not built)
};

// Imports every built recipe whose manifest differs from the store's image of that name.
// A recipe that was never built is reported "missing", not an error; a cached layout that fails
// to import is an error.
Result<std::vector<BuiltinImageResult>> ImportBuiltinImages(ImageStore& store,
                                                            const std::string& cache_dir);

}  // namespace warren::image
