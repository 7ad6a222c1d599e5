#include "api/object.h"

#include <algorithm>

namespace warren::api {
namespace {

const Json& NullJson() {
  static const Json* null = new Json(nullptr);
  return *null;
}

Json& ObjectField(Json& body, const char* name) {
  Json& field = body[name];
  if (!field.is_object()) field = Json::object();
  return field;
}

}  // namespace

Json& Object::spec() { return ObjectField(body, "spec"); }
Json& Object::status() { return ObjectField(body, "status"); }

const Json& Object::spec() const {
  auto it = body.find("spec");
  return it == body.end() ? NullJson() : *it;
}

const Json& Object::status() const {
  auto it = body.find("status");
  return it == body.end() ? NullJson() : *it;
}

std::string Object::Key() const {
  if (metadata.namespace_.empty()) return metadata.name;
  return metadata.namespace_ + "/" + metadata.name;
}

std::pair<std::string, std::string> SplitKey(std::string_view key) {
  auto slash = key.find('/');
  if (slash == std::string_view::npos) return {"", std::string(key)};
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

std::string_view Object::Group() const { return GroupOf(api_version); }

bool Object::HasFinalizer(std::string_view finalizer) const {
  return std::find(metadata.finalizers.begin(), metadata.finalizers.end(), finalizer) !=
         metadata.finalizers.end();
}

bool Object::AddFinalizer(std::string_view finalizer) {
  if (HasFinalizer(finalizer)) return false;
  metadata.finalizers.emplace_back(finalizer);
  return true;
}

bool Object::RemoveFinalizer(std::string_view finalizer) {
  auto& f = metadata.finalizers;
  auto it = std::remove(f.begin(), f.end(), finalizer);
  if (it == f.end()) return false;
  f.erase(it, f.end());
  return true;
}

const OwnerReference* Object::ControllerRef() const {
  for (const auto& ref : metadata.owner_references) {
    if (ref.controller) return &ref;
  }
  return nullptr;
}

OwnerReference Object::MakeControllerRef() const {
  return OwnerReference{.api_version = api_version,
                        .kind = kind,
                        .name = metadata.name,
                        .uid = metadata.uid,
                        .controller = true,
                        .block_owner_deletion = true};
}

std::string_view GroupOf(std::string_view api_version) {
  auto slash = api_version.find('/');
  if (slash == std::string_view::npos) return {};
  return api_version.substr(0, slash);
}

}  // namespace warren::api
