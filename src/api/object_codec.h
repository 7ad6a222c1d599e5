#pragma once

#include <string>
#include <string_view>

#include "api/json.h"
#include "api/object.h"
#include "base/result.h"

namespace warren::api {

// Decodes a Kubernetes-shaped JSON document. Checks the types of apiVersion, kind and every
// metadata field we model (a wrong type → InvalidArgument naming the field, e.g.
// "metadata.labels.app: must be a string, got integer"); it does not check values (names,
// label syntax), which is admission's job (api/admission.h). Unknown fields anywhere are kept.
Result<Object> ObjectFromJson(Json doc);
// ParseJson + ObjectFromJson.
Result<Object> ObjectFromJsonText(std::string_view text);

// The full document: apiVersion, kind, metadata (typed fields merged over `extra`), body.
Json ObjectToJson(const Object& object);
std::string ObjectToJsonText(const Object& object);

// The metadata block alone, as it appears in ObjectToJson.
Json MetadataToJson(const ObjectMeta& meta);

}  // namespace warren::api
