#include "image/builtin_images.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "image/logger.h"
#include "image/oci_layout.h"
#include "image/reference.h"

namespace warren::image {

bool IsBuiltinImageName(std::string_view name) {
  auto ref = ParseImageRef(name);
  return ref.ok() && ref->tag == "latest" &&
         std::any_of(std::begin(kBuiltinRecipes), std::end(kBuiltinRecipes),
                     [&](std::string_view recipe) { return ref->repository == recipe; });
}

std::string DefaultImageCacheDir() {
  const char* env = getenv("WARREN_IMAGE_CACHE");
  return env != nullptr && *env != '\0' ? env : kDefaultImageCacheDir;
}

Result<std::vector<BuiltinImageResult>> ImportBuiltinImages(ImageStore& store,
                                                            const std::string& cache_dir) {
  std::vector<BuiltinImageResult> out;
  for (const char* recipe : kBuiltinRecipes) {
    std::string name = fmt::format("{}:latest", recipe);
    std::string layout_dir = fmt::format("{}/{}/oci", cache_dir, recipe);
    if (access((layout_dir + "/index.json").c_str(), F_OK) != 0) {
      out.push_back({name, "missing"});
      continue;
    }
    ASSIGN_OR_RETURN(OciLayout layout, OciLayout::Open(layout_dir));
    ASSIGN_OR_RETURN(SelectedImage selected, layout.Select(name));
    auto existing = store.Get(name);
    if (existing.ok() && existing->manifest_digest == selected.manifest_descriptor.digest) {
      out.push_back({name, "current"});
      continue;
    }
    auto imported = store.ImportLayout(layout_dir, {.name = name});
    if (!imported.ok()) {
      return imported.status().WithPrefix(fmt::format("built-in image {}", name));
    }
    Log()->info("built-in image imported name={} manifest={}", name,
                imported->manifest_digest.Short());
    out.push_back({name, "imported"});
  }
  // A rebuilt recipe leaves its previous layers unreferenced; they are hundreds of MB.
  bool imported = std::any_of(out.begin(), out.end(),
                              [](const BuiltinImageResult& r) { return r.action == "imported"; });
  if (imported) RETURN_IF_ERROR(store.Gc().status());
  return out;
}

}  // namespace warren::image
