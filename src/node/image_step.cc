#include "node/image_step.h"

#include <fmt/format.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/checkpoint.h"
#include "api/types/labels.h"
#include "base/log.h"
#include "image/builtin_images.h"
#include "node/checkpoint_agent.h"
#include "node/reasons.h"

namespace warren::node {
namespace {

auto Log() { return base::Logger("node"); }

// The sandbox's lease holds only while the sandbox runs, which no reboot outlives.
constexpr auto kSandboxLease = image::ImageStore::LeaseLife::kUntilReboot;

// "host:port/repo:tag", "registry.example/repo", "localhost/repo": what Pull can fetch.
bool IsRegistryReference(const std::string& image) {
  const auto slash = image.find('/');
  if (slash == std::string::npos) return false;
  const std::string first = image.substr(0, slash);
  return first.find('.') != std::string::npos || first.find(':') != std::string::npos ||
         first == "localhost";
}

// The image of a Succeeded Checkpoint of `namespace_`. NotFound / FailedPrecondition end the
// sandbox; Unavailable: not yet.
Result<std::string> CheckpointImage(store::Store& store, const std::string& namespace_,
                                    const std::string& checkpoint) {
  auto cp = store.Get(api::CheckpointKind(), namespace_, checkpoint);
  if (!cp.ok()) {
    if (cp.status().code() != StatusCode::kNotFound) return UnavailableError("store");
    return NotFoundError(fmt::format("checkpoint {}/{} (the {} annotation) not found", namespace_,
                                     checkpoint, api::annotations::kRestoreFrom));
  }
  auto status = api::DecodeStatus<api::CheckpointStatus>(*cp);
  const std::string phase = status.ok() ? status->phase : "";
  if (phase == "Succeeded" && IsCheckpointImageName(status->checkpoint_id)) {
    return status->checkpoint_id;
  }
  if (phase == "Failed" || cp->metadata.deletion_timestamp) {
    return FailedPreconditionError(
        fmt::format("checkpoint {}/{} {}", namespace_, checkpoint,
                    phase == "Failed" ? "failed: " + status->message : "is being deleted"));
  }
  return UnavailableError("not finished yet");
}

}  // namespace

ImageStepOutcome LeaseSandboxImage(store::Store& store, image::ImageStore& images,
                                   const api::Object& sandbox, const ImageStepInput& in) {
  ImageStepOutcome out;
  out.image_name = in.image;
  auto fail = [&](const char* reason, std::string message) {
    out.failure = Failure{reason, std::move(message)};
    return out;
  };
  if (IsCheckpointImageName(in.image)) {
    return fail(reasons::kInvalidImage,
                fmt::format("image \"{}\": names under snapshot/ are Warren's own; start from a "
                            "checkpoint with the {} annotation",
                            in.image, api::annotations::kRestoreFrom));
  }
  if (auto restore = sandbox.metadata.annotations.find(api::annotations::kRestoreFrom);
      restore != sandbox.metadata.annotations.end()) {
    auto from = CheckpointImage(store, sandbox.metadata.namespace_, restore->second);
    if (!from.ok()) {
      if (from.status().code() == StatusCode::kUnavailable) return out;
      return fail(reasons::kCheckpointNotFound, from.status().message());
    }
    out.image_name = *from;
  }
  const std::string& name = out.image_name;
  // A recipe rebuilt since the last start is imported under its old name: until that import is
  // done, the store's copy may be the previous build, which nobody asked for any more.
  if (!in.builtin_images_ready && image::IsBuiltinImageName(name)) return out;
  auto leased = images.AcquireLease(in.lease_id, name, kSandboxLease);
  if (!leased.ok() && leased.status().code() == StatusCode::kNotFound) {
    if (!in.builtin_images_ready) return out;  // the built-in images are still being imported
    if (!IsRegistryReference(name)) {
      return fail(reasons::kImageNotFound,
                  fmt::format("image \"{}\" is not in this node's image store (import it with "
                              "`warren image import`, or name a registry reference "
                              "host:port/repository:tag)",
                              name));
    }
    Log()->info("pulling image={} for={}", name, sandbox.Key());
    auto pulled = images.Pull(name);
    if (!pulled.ok()) {
      return fail(reasons::kErrImagePull,
                  fmt::format("pulling image \"{}\" failed: {}", name, pulled.status().message()));
    }
    leased = images.AcquireLease(in.lease_id, name, kSandboxLease);
  }
  if (!leased.ok()) {
    Log()->warn("image lease failed object={} image={} error=\"{}\"", sandbox.Key(), name,
                leased.status().ToString());
    if (leased.status().code() == StatusCode::kInvalidArgument) {
      return fail(reasons::kImageNotFound, leased.status().message());
    }
    return out;
  }
  out.image = std::move(leased).value();
  return out;
}

}  // namespace warren::node
