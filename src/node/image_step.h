#pragma once

#include <optional>
#include <string>

#include "api/object.h"
#include "image/image_store.h"
#include "node/failure.h"
#include "store/store.h"

namespace warren::node {

// What the image step of a create decided: the image leased for the sandbox's life, or the
// failure that ends it, or neither (not yet: retry later).
struct ImageStepOutcome {
  std::optional<image::ResolvedImage> image;
  std::optional<Failure> failure;
  std::string image_name;  // what was leased (a checkpoint's image when restoring)
};

struct ImageStepInput {
  std::string image;     // the main container's image as the template names it
  std::string lease_id;  // the sandbox's lease
  // The built-in images are imported (until then a missing image, or a built-in one, is "not
  // yet").
  bool builtin_images_ready = true;
};

// The image step of a create, one call: the image a sandbox starts on, pinned by its lease.
//   - An image name under "snapshot/" (a checkpoint's) is refused: InvalidImageName.
//   - agents.kruise.io/restore-from: NAME → the image of the Checkpoint NAME in the sandbox's
//     own namespace, once Succeeded (pending: not yet; missing, failed or being deleted:
//     CheckpointNotFound). So a team only ever starts from its own snapshots.
//   - A name the store lacks: a registry reference (host[:port]/repo:tag, localhost/...) is
//     pulled (ErrImagePull naming why not); a bare name is ImageNotFound.
// Blocking (store reads, pulls): call from a reconcile worker.
ImageStepOutcome LeaseSandboxImage(store::Store& store, image::ImageStore& images,
                                   const api::Object& sandbox, const ImageStepInput& in);

}  // namespace warren::node
