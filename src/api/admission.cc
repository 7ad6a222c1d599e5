#include "api/admission.h"

#include <fmt/format.h>

namespace warren::api {
namespace {

std::string InvalidPrefix(const KindInfo& kind, const Object& object) {
  std::string name = object.metadata.name.empty() ? object.metadata.generate_name + "<generated>"
                                                  : object.metadata.name;
  return fmt::format("{} \"{}\" is invalid: ", kind.GroupKind(), name);
}

Status WithPrefix(const Status& s, const KindInfo& kind, const Object& object) {
  if (s.ok() || s.code() != StatusCode::kInvalidArgument) return s;
  return InvalidArgumentError(InvalidPrefix(kind, object) + s.message());
}

Status CheckTypeMeta(const KindInfo& kind, const Object& object) {
  if (object.api_version != kind.ApiVersion() || object.kind != kind.kind) {
    return InvalidArgumentError(fmt::format(
        "object is apiVersion \"{}\" kind \"{}\", expected apiVersion \"{}\" kind \"{}\"",
        object.api_version, object.kind, kind.ApiVersion(), kind.kind));
  }
  return Status::Ok();
}

}  // namespace

void ValidateObjectMeta(const KindInfo& kind, const ObjectMeta& meta, FieldErrors& errors) {
  if (meta.name.empty()) {
    if (meta.generate_name.empty()) {
      errors.Add("metadata.name", "Required value: name or generateName is required");
    } else if (meta.generate_name.size() > 253 - 5) {
      errors.Add("metadata.generateName", "must be no more than 248 characters");
    } else if (auto err = CheckDns1123Subdomain(meta.generate_name + "x")) {
      errors.Add("metadata.generateName", *err);
    }
  } else if (auto err = CheckDns1123Subdomain(meta.name)) {
    errors.Add("metadata.name", *err);
  }
  if (kind.namespaced) {
    if (meta.namespace_.empty()) {
      errors.Required("metadata.namespace");
    } else if (auto err = CheckDns1123Label(meta.namespace_)) {
      errors.Add("metadata.namespace", *err);
    }
  } else if (!meta.namespace_.empty()) {
    errors.Add("metadata.namespace", fmt::format("not allowed: {} is cluster-scoped", kind.kind));
  }
  ValidateLabels(meta.labels, "metadata.labels", errors);
  ValidateAnnotations(meta.annotations, "metadata.annotations", errors);
  for (size_t i = 0; i < meta.finalizers.size(); ++i) {
    if (auto err = CheckQualifiedName(meta.finalizers[i])) {
      errors.Add(IndexPath("metadata.finalizers", i), *err);
    }
  }
  int controllers = 0;
  for (size_t i = 0; i < meta.owner_references.size(); ++i) {
    const OwnerReference& r = meta.owner_references[i];
    std::string path = IndexPath("metadata.ownerReferences", i);
    if (r.api_version.empty()) errors.Required(ChildPath(path, "apiVersion"));
    if (r.kind.empty()) errors.Required(ChildPath(path, "kind"));
    if (r.name.empty()) errors.Required(ChildPath(path, "name"));
    if (r.uid.empty()) errors.Required(ChildPath(path, "uid"));
    if (r.controller) ++controllers;
  }
  if (controllers > 1) {
    errors.Add("metadata.ownerReferences", "Only one reference can have Controller set to true");
  }
}

Status AdmitCreate(const KindInfo& kind, Object& object) {
  RETURN_IF_ERROR(CheckTypeMeta(kind, object));
  FieldErrors errors;
  ValidateObjectMeta(kind, object.metadata, errors);
  if (!errors.empty()) return errors.ToStatus(InvalidPrefix(kind, object));
  if (kind.admit) RETURN_IF_ERROR(WithPrefix(kind.admit(object), kind, object));
  return Status::Ok();
}

Status AdmitUpdate(const KindInfo& kind, const Object& old_object, Object& object) {
  RETURN_IF_ERROR(AdmitCreate(kind, object));
  if (kind.admit_update) {
    RETURN_IF_ERROR(WithPrefix(kind.admit_update(old_object, object), kind, object));
  }
  return Status::Ok();
}

Status AdmitStatus(const KindInfo& kind, Object& object) {
  if (kind.admit_status) RETURN_IF_ERROR(WithPrefix(kind.admit_status(object), kind, object));
  return Status::Ok();
}

}  // namespace warren::api
