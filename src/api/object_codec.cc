#include "api/object_codec.h"

#include <fmt/format.h>

#include "api/validation.h"
#include "base/strings.h"
#include "base/time_format.h"

namespace warren::api {
namespace {

std::string TypeError(std::string_view want, const Json& got) {
  return fmt::format("must be {}, got {}", want, JsonTypeName(got));
}

void TakeString(Json& meta, const char* key, std::string& out, FieldErrors& errors) {
  auto it = meta.find(key);
  if (it == meta.end()) return;
  if (it->is_string()) {
    out = it->get<std::string>();
  } else if (!it->is_null()) {
    errors.Add(ChildPath("metadata", key), TypeError("a string", *it));
  }
  meta.erase(it);
}

void TakeStringMap(Json& meta, const char* key, std::map<std::string, std::string>& out,
                   FieldErrors& errors) {
  auto it = meta.find(key);
  if (it == meta.end()) return;
  std::string path = ChildPath("metadata", key);
  if (it->is_object()) {
    for (auto& [k, v] : it->items()) {
      if (v.is_string()) {
        out[k] = v.get<std::string>();
      } else {
        errors.Add(KeyPath(path, k), TypeError("a string", v));
      }
    }
  } else if (!it->is_null()) {
    errors.Add(path, TypeError("an object of strings", *it));
  }
  meta.erase(it);
}

void TakeTime(Json& meta, const char* key, std::optional<base::WallTime>& out,
              FieldErrors& errors) {
  auto it = meta.find(key);
  if (it == meta.end()) return;
  std::string path = ChildPath("metadata", key);
  if (it->is_string()) {
    if (auto t = base::ParseRfc3339(it->get<std::string>())) {
      out = *t;
    } else {
      errors.Add(path, fmt::format("must be an RFC 3339 time, got \"{}\"", it->get<std::string>()));
    }
  } else if (!it->is_null()) {
    errors.Add(path, TypeError("an RFC 3339 time string", *it));
  }
  meta.erase(it);
}

void TakeResourceVersion(Json& meta, int64_t& out, FieldErrors& errors) {
  auto it = meta.find("resourceVersion");
  if (it == meta.end()) return;
  if (it->is_string()) {
    std::string s = it->get<std::string>();
    if (!s.empty()) {
      auto v = base::ParseInt64(s);
      if (v && *v > 0) {
        out = *v;
      } else {
        errors.Add("metadata.resourceVersion",
                   fmt::format("must be a positive decimal revision, got \"{}\"", s));
      }
    }
  } else if (it->is_number_integer() && it->get<int64_t>() > 0) {
    out = it->get<int64_t>();  // lenient: some clients send a number
  } else if (!it->is_null()) {
    errors.Add("metadata.resourceVersion", TypeError("a decimal string", *it));
  }
  meta.erase(it);
}

void TakeOwnerReferences(Json& meta, std::vector<OwnerReference>& out, FieldErrors& errors) {
  auto it = meta.find("ownerReferences");
  if (it == meta.end()) return;
  if (it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& r = (*it)[i];
      std::string path = IndexPath("metadata.ownerReferences", i);
      if (!r.is_object()) {
        errors.Add(path, TypeError("an object", r));
        continue;
      }
      OwnerReference ref;
      auto str = [&](const char* k, std::string& field) {
        auto f = r.find(k);
        if (f == r.end() || f->is_null()) return;
        if (f->is_string()) {
          field = f->get<std::string>();
        } else {
          errors.Add(ChildPath(path, k), TypeError("a string", *f));
        }
      };
      auto flag = [&](const char* k, bool& field) {
        auto f = r.find(k);
        if (f == r.end() || f->is_null()) return;
        if (f->is_boolean()) {
          field = f->get<bool>();
        } else {
          errors.Add(ChildPath(path, k), TypeError("a boolean", *f));
        }
      };
      str("apiVersion", ref.api_version);
      str("kind", ref.kind);
      str("name", ref.name);
      str("uid", ref.uid);
      flag("controller", ref.controller);
      flag("blockOwnerDeletion", ref.block_owner_deletion);
      out.push_back(std::move(ref));
    }
  } else if (!it->is_null()) {
    errors.Add("metadata.ownerReferences", TypeError("an array", *it));
  }
  meta.erase(it);
}

void TakeFinalizers(Json& meta, std::vector<std::string>& out, FieldErrors& errors) {
  auto it = meta.find("finalizers");
  if (it == meta.end()) return;
  if (it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& f = (*it)[i];
      if (f.is_string()) {
        out.push_back(f.get<std::string>());
      } else {
        errors.Add(IndexPath("metadata.finalizers", i), TypeError("a string", f));
      }
    }
  } else if (!it->is_null()) {
    errors.Add("metadata.finalizers", TypeError("an array of strings", *it));
  }
  meta.erase(it);
}

}  // namespace

Result<Object> ObjectFromJson(Json doc) {
  if (!doc.is_object()) {
    return InvalidArgumentError(
        fmt::format("an object must be a JSON object, got {}", JsonTypeName(doc)));
  }
  Object obj;
  FieldErrors errors;
  auto take_top = [&](const char* key, std::string& out) {
    auto it = doc.find(key);
    if (it == doc.end()) return;
    if (it->is_string()) {
      out = it->get<std::string>();
    } else if (!it->is_null()) {
      errors.Add(key, TypeError("a string", *it));
    }
    doc.erase(it);
  };
  take_top("apiVersion", obj.api_version);
  take_top("kind", obj.kind);

  if (auto it = doc.find("metadata"); it != doc.end()) {
    if (it->is_object()) {
      Json meta = std::move(*it);
      ObjectMeta& m = obj.metadata;
      TakeString(meta, "name", m.name, errors);
      TakeString(meta, "generateName", m.generate_name, errors);
      TakeString(meta, "namespace", m.namespace_, errors);
      TakeString(meta, "uid", m.uid, errors);
      TakeStringMap(meta, "labels", m.labels, errors);
      TakeStringMap(meta, "annotations", m.annotations, errors);
      TakeResourceVersion(meta, m.resource_version, errors);
      if (auto g = meta.find("generation"); g != meta.end()) {
        if (g->is_number_integer()) {
          m.generation = g->get<int64_t>();
        } else if (!g->is_null()) {
          errors.Add("metadata.generation", TypeError("an integer", *g));
        }
        meta.erase(g);
      }
      TakeTime(meta, "creationTimestamp", m.creation_timestamp, errors);
      TakeTime(meta, "deletionTimestamp", m.deletion_timestamp, errors);
      TakeFinalizers(meta, m.finalizers, errors);
      TakeOwnerReferences(meta, m.owner_references, errors);
      m.extra = std::move(meta);
    } else if (!it->is_null()) {
      errors.Add("metadata", TypeError("an object", *it));
    }
    doc.erase(it);
  }
  RETURN_IF_ERROR(errors.ToStatus());
  obj.body = std::move(doc);
  return obj;
}

Result<Object> ObjectFromJsonText(std::string_view text) {
  ASSIGN_OR_RETURN(Json doc, ParseJson(text));
  return ObjectFromJson(std::move(doc));
}

Json MetadataToJson(const ObjectMeta& m) {
  Json meta = m.extra.is_object() ? m.extra : Json::object();
  auto set_string = [&](const char* key, const std::string& v) {
    if (v.empty()) {
      meta.erase(key);
    } else {
      meta[key] = v;
    }
  };
  set_string("name", m.name);
  set_string("generateName", m.generate_name);
  set_string("namespace", m.namespace_);
  set_string("uid", m.uid);
  if (m.labels.empty()) {
    meta.erase("labels");
  } else {
    meta["labels"] = m.labels;
  }
  if (m.annotations.empty()) {
    meta.erase("annotations");
  } else {
    meta["annotations"] = m.annotations;
  }
  set_string("resourceVersion", m.resource_version > 0 ? std::to_string(m.resource_version) : "");
  if (m.generation > 0) {
    meta["generation"] = m.generation;
  } else {
    meta.erase("generation");
  }
  set_string("creationTimestamp",
             m.creation_timestamp ? base::FormatRfc3339(*m.creation_timestamp) : "");
  set_string("deletionTimestamp",
             m.deletion_timestamp ? base::FormatRfc3339(*m.deletion_timestamp) : "");
  if (m.finalizers.empty()) {
    meta.erase("finalizers");
  } else {
    meta["finalizers"] = m.finalizers;
  }
  if (m.owner_references.empty()) {
    meta.erase("ownerReferences");
  } else {
    Json refs = Json::array();
    for (const auto& r : m.owner_references) {
      Json j = {{"apiVersion", r.api_version}, {"kind", r.kind}, {"name", r.name}, {"uid", r.uid}};
      if (r.controller) j["controller"] = true;
      if (r.block_owner_deletion) j["blockOwnerDeletion"] = true;
      refs.push_back(std::move(j));
    }
    meta["ownerReferences"] = std::move(refs);
  }
  return meta;
}

Json ObjectToJson(const Object& obj) {
  Json doc = obj.body.is_object() ? obj.body : Json::object();
  if (!obj.api_version.empty()) doc["apiVersion"] = obj.api_version;
  if (!obj.kind.empty()) doc["kind"] = obj.kind;
  doc["metadata"] = MetadataToJson(obj.metadata);
  return doc;
}

std::string ObjectToJsonText(const Object& obj) { return DumpJson(ObjectToJson(obj)); }

}  // namespace warren::api
