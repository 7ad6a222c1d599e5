// Defaulting and validation of Warren's own kinds (warren.dev/v1alpha1): Node, Event,
// ResourceQuota and Volume; and of Lease (coordination.k8s.io/v1).

#include <fmt/format.h>

#include "api/admission.h"
#include "api/typed_codec.h"
#include "api/types/event.h"
#include "api/types/lease.h"
#include "api/types/node.h"
#include "api/types/resource_quota.h"
#include "api/types/volume.h"
#include "api/validation.h"
#include "base/time_format.h"

namespace warren::api {

Status AdmitNode(Object& object) { return DecodeSpec<NodeSpec>(object).status(); }

Status AdmitNodeStatus(Object& object) { return DecodeStatus<NodeStatus>(object).status(); }

Status AdmitEvent(Object& object) {
  ASSIGN_OR_RETURN(EventFields event, DecodeTyped<EventFields>(object.body, ""));
  FieldErrors errors;
  if (event.involved_object.kind.empty()) errors.Required("involvedObject.kind");
  if (event.involved_object.name.empty()) errors.Required("involvedObject.name");
  if (event.type.empty()) event.type = "Normal";
  if (event.type != "Normal" && event.type != "Warning") {
    errors.Unsupported("type", event.type, {"Normal", "Warning"});
  }
  if (event.reason.empty()) errors.Required("reason");
  if (event.count < 0) errors.Add("count", "must be >= 0");
  RETURN_IF_ERROR(errors.ToStatus());
  EncodeTyped(event, object.body);
  return Status::Ok();
}

Status AdmitLease(Object& object) {
  ASSIGN_OR_RETURN(LeaseSpec spec, DecodeSpec<LeaseSpec>(object));
  FieldErrors errors;
  if (spec.lease_duration_seconds && *spec.lease_duration_seconds <= 0) {
    errors.Add("spec.leaseDurationSeconds", "must be greater than 0");
  }
  if (spec.lease_transitions && *spec.lease_transitions < 0) {
    errors.Add("spec.leaseTransitions", "must be greater than or equal to 0");
  }
  for (const auto& [path, value] :
       {std::pair<const char*, const std::string&>{"spec.acquireTime", spec.acquire_time},
        std::pair<const char*, const std::string&>{"spec.renewTime", spec.renew_time}}) {
    if (!value.empty() && !base::ParseRfc3339(value)) {
      errors.Add(path, fmt::format("Invalid value: \"{}\": not an RFC 3339 time", value));
    }
  }
  return errors.ToStatus();
}

Status AdmitResourceQuota(Object& object) {
  ASSIGN_OR_RETURN(ResourceQuotaSpec spec, DecodeSpec<ResourceQuotaSpec>(object));
  FieldErrors errors;
  for (const auto& [key, value] : spec.hard) {
    std::string path = KeyPath("spec.hard", key);
    if (key != kQuotaSandboxes && key != kQuotaCpu && key != kQuotaMemory) {
      errors.Unsupported(path, key, {kQuotaSandboxes, kQuotaCpu, kQuotaMemory});
    } else if (value.MilliValue() < 0) {
      errors.Add(path, "must be >= 0");
    } else if (key == kQuotaSandboxes && value.MilliValue() % 1000 != 0) {
      errors.Add(path, "must be a whole number of sandboxes");
    }
  }
  return errors.ToStatus();
}

Status AdmitResourceQuotaStatus(Object& object) {
  return DecodeStatus<ResourceQuotaStatus>(object).status();
}

Status AdmitVolume(Object& object) {
  ASSIGN_OR_RETURN(VolumeSpec spec, DecodeSpec<VolumeSpec>(object));
  FieldErrors errors;
  if (!spec.size) spec.size = *Quantity::Parse(kDefaultVolumeSize);
  if (spec.size->Value() < kMinVolumeBytes || spec.size->Value() > kMaxVolumeBytes) {
    errors.Add("spec.size", fmt::format("Invalid value: \"{}\": must be between 1Mi and 1Ti",
                                        spec.size->ToString()));
  }
  RETURN_IF_ERROR(errors.ToStatus());
  EncodeSpec(spec, object);
  return Status::Ok();
}

Status AdmitVolumeUpdate(const Object& old_object, const Object& new_object) {
  ASSIGN_OR_RETURN(VolumeSpec old_spec, DecodeSpec<VolumeSpec>(old_object));
  ASSIGN_OR_RETURN(VolumeSpec new_spec, DecodeSpec<VolumeSpec>(new_object));
  if (old_spec.size != new_spec.size) {
    FieldErrors errors;
    errors.Add("spec.size", fmt::format("Invalid value: \"{}\": field is immutable (was \"{}\")",
                                        new_spec.size ? new_spec.size->ToString() : "",
                                        old_spec.size ? old_spec.size->ToString() : ""));
    return errors.ToStatus();
  }
  return Status::Ok();
}

Status AdmitVolumeStatus(Object& object) { return DecodeStatus<VolumeStatus>(object).status(); }

}  // namespace warren::api
