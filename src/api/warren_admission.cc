// Defaulting and validation of Warren's own kinds (warren.dev/v1alpha1): Node and Event.

#include <fmt/format.h>

#include "api/admission.h"
#include "api/typed_codec.h"
#include "api/types/event.h"
#include "api/types/node.h"

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

}  // namespace warren::api
