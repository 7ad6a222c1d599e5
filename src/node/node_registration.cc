#include "node/node_registration.h"

#include <sys/utsname.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/node.h"

namespace warren::node {
namespace {

constexpr int kConflictRetries = 5;

api::Condition ReadyCondition() {
  return {.type = "Ready",
          .status = "True",
          .reason = "AgentRunning",
          .message = "the node agent is running"};
}

std::string KernelRelease() {
  struct utsname u;
  return uname(&u) == 0 ? u.release : "";
}

}  // namespace

Status PublishNode(store::Store& store, const NodeRegistration& node,
                   const image::ImageStore& images, base::Clock& clock) {
  api::NodeStatus status;
  if (node.capacity.cpu_millicores > 0) {
    status.capacity["cpu"] = api::Quantity::FromMilli(node.capacity.cpu_millicores);
  }
  if (node.capacity.memory_bytes > 0) {
    status.capacity["memory"] = api::Quantity::FromValue(node.capacity.memory_bytes);
  }
  status.allocatable = status.capacity;
  status.runtime_classes = node.runtime_classes;
  status.address = node.address;
  status.kernel_version = KernelRelease();
  status.last_heartbeat_time = clock.Now();
  const api::Condition ready = ReadyCondition();
  api::SetCondition(status.conditions, ready, clock.Now());
  for (const auto& image : images.List()) {
    status.images.push_back(
        {.names = {image.name, image.name + "@" + image.manifest_digest.ToString()},
         .size_bytes = image.compressed_size});
  }
  for (int attempt = 0;; ++attempt) {
    auto current = store.Get(api::NodeKind(), "", node.name);
    api::Object object;
    if (current.ok()) {
      object = std::move(current).value();
      if (auto old = api::DecodeStatus<api::NodeStatus>(object); old.ok()) {
        // The transition time of Ready stays when it was Ready already.
        status.conditions = old->conditions;
        api::SetCondition(status.conditions, ready, clock.Now());
      }
    } else if (current.status().code() == StatusCode::kNotFound) {
      object.api_version = api::kWarrenApiVersion;
      object.kind = "Node";
      object.metadata.name = node.name;
      object.metadata.labels["kubernetes.io/hostname"] = node.name;
      object.metadata.labels["warren.dev/node"] = node.name;
      auto created = store.Create(object);
      if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
        return created.status();
      }
      continue;
    } else {
      return current.status();
    }
    api::EncodeStatus(status, object);
    auto written = store.Update(object, store::Subresource::kStatus);
    if (written.ok()) return Status::Ok();
    if (written.status().code() != StatusCode::kAborted || attempt >= kConflictRetries) {
      return written.status();
    }
  }
}

Status RenewNodeHeartbeat(store::Store& store, const std::string& name, base::Clock& clock) {
  for (int attempt = 0;; ++attempt) {
    ASSIGN_OR_RETURN(api::Object object, store.Get(api::NodeKind(), "", name));
    ASSIGN_OR_RETURN(api::NodeStatus status, api::DecodeStatus<api::NodeStatus>(object));
    status.last_heartbeat_time = clock.Now();
    api::SetCondition(status.conditions, ReadyCondition(), clock.Now());
    api::EncodeStatus(status, object);
    auto written = store.Update(object, store::Subresource::kStatus);
    if (written.ok()) return Status::Ok();
    if (written.status().code() != StatusCode::kAborted || attempt >= kConflictRetries) {
      return written.status();
    }
  }
}

}  // namespace warren::node
