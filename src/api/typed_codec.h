#pragma once

// Decoding typed views (api/types/*.h) out of an object's JSON and encoding them back. Each
// struct's Fields() list drives both directions:
//   - Decode checks every known field's type and reports all mismatches with their paths
//     ("spec.replicas: must be an integer, got string"); absent or null fields keep the
//     struct's default.
//   - Encode writes known fields into the existing document and leaves every other key alone,
//     so fields Warren does not model (and unknown ones) survive a decode/modify/encode cycle.
//     Zero values are omitted (Go's omitempty); std::optional fields are written whenever set.
//     Arrays of structs are merged element by element, so unknown fields inside list items
//     (e.g. a container's livenessProbe) survive too.

#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api/json.h"
#include "api/object.h"
#include "api/types/common.h"
#include "api/validation.h"
#include "base/result.h"

namespace warren::api {

template <class T>
concept ApiStruct = requires {
  typename T::IsApiStruct;
};

namespace codec {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

class Reader {
 public:
  Reader(const Json& object, std::string path, FieldErrors& errors)
      : object_(object), path_(std::move(path)), errors_(errors) {}

  template <class T>
  void operator()(const char* key, T& out) {
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return;
    Read(*it, ChildPath(path_, key), out);
  }

  // One overload per wire type.
  void Read(const Json& j, const std::string& path, std::string& out);
  void Read(const Json& j, const std::string& path, bool& out);
  void Read(const Json& j, const std::string& path, int32_t& out);
  void Read(const Json& j, const std::string& path, int64_t& out);
  void Read(const Json& j, const std::string& path, base::WallTime& out);
  void Read(const Json& j, const std::string& path, Duration& out);
  void Read(const Json& j, const std::string& path, Quantity& out);
  void Read(const Json& j, const std::string& path, IntOrString& out);
  void Read(const Json& j, const std::string& path, RawJson& out);

  template <class T>
  void Read(const Json& j, const std::string& path, std::optional<T>& out) {
    out.emplace();
    Read(j, path, *out);
  }
  template <class T>
  void Read(const Json& j, const std::string& path, std::vector<T>& out) {
    if (!j.is_array()) {
      TypeError(path, "an array", j);
      return;
    }
    out.clear();
    out.reserve(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
      T item{};
      if (!j[i].is_null()) Read(j[i], IndexPath(path, i), item);
      out.push_back(std::move(item));
    }
  }
  template <class T>
  void Read(const Json& j, const std::string& path, std::map<std::string, T>& out) {
    if (!j.is_object()) {
      TypeError(path, "an object", j);
      return;
    }
    out.clear();
    for (const auto& [k, v] : j.items()) {
      T item{};
      if (!v.is_null()) Read(v, KeyPath(path, k), item);
      out.emplace(k, std::move(item));
    }
  }
  template <ApiStruct T>
  void Read(const Json& j, const std::string& path, T& out) {
    if (!j.is_object()) {
      TypeError(path, "an object", j);
      return;
    }
    Reader sub(j, path, errors_);
    T::Fields(out, sub);
  }

 private:
  void TypeError(const std::string& path, std::string_view want, const Json& got);

  const Json& object_;
  std::string path_;
  FieldErrors& errors_;
};

class Writer {
 public:
  explicit Writer(Json& object) : object_(object) {}

  template <class T>
  void operator()(const char* key, const T& value) {
    if constexpr (IsOptional<T>::value) {
      if (!value) {
        object_.erase(key);
      } else {
        Write(object_[key], *value);
      }
    } else if constexpr (ApiStruct<T>) {
      Json& slot = object_[key];
      Write(slot, value);
      if (slot.is_object() && slot.empty()) object_.erase(key);
    } else {
      if (IsZero(value)) {
        object_.erase(key);
      } else {
        Write(object_[key], value);
      }
    }
  }

  static void Write(Json& slot, const std::string& v) { slot = v; }
  static void Write(Json& slot, bool v) { slot = v; }
  static void Write(Json& slot, int32_t v) { slot = v; }
  static void Write(Json& slot, int64_t v) { slot = v; }
  static void Write(Json& slot, const base::WallTime& v);
  static void Write(Json& slot, const Duration& v);
  static void Write(Json& slot, const Quantity& v) { slot = v.ToString(); }
  static void Write(Json& slot, const IntOrString& v);
  static void Write(Json& slot, const RawJson& v);

  template <class T>
  static void Write(Json& slot, const std::vector<T>& v) {
    Json old = slot.is_array() ? std::move(slot) : Json::array();
    Json out = Json::array();
    for (size_t i = 0; i < v.size(); ++i) {
      Json item = i < old.size() ? std::move(old[i]) : Json();
      Write(item, v[i]);
      out.push_back(std::move(item));
    }
    slot = std::move(out);
  }
  template <class T>
  static void Write(Json& slot, const std::map<std::string, T>& v) {
    Json out = Json::object();
    for (const auto& [k, item] : v) Write(out[k], item);
    slot = std::move(out);
  }
  template <ApiStruct T>
  static void Write(Json& slot, const T& v) {
    if (!slot.is_object()) slot = Json::object();
    Writer sub(slot);
    T::Fields(v, sub);
  }

 private:
  template <class T>
  static bool IsZero(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      return v.empty();
    } else if constexpr (std::is_same_v<T, bool>) {
      return !v;
    } else if constexpr (std::is_integral_v<T>) {
      return v == 0;
    } else if constexpr (std::is_same_v<T, RawJson>) {
      return v.text.empty();
    } else if constexpr (requires { v.empty(); }) {
      return v.empty();
    } else {
      return false;
    }
  }

  Json& object_;
};

}  // namespace codec

// Decodes `json` (an object, or null/absent for all defaults) as T; type errors name fields
// under `path`.
template <ApiStruct T>
Result<T> DecodeTyped(const Json& json, std::string_view path) {
  T out{};
  if (json.is_null()) return out;
  FieldErrors errors;
  codec::Reader reader(json, std::string(path), errors);
  reader.Read(json, std::string(path), out);
  RETURN_IF_ERROR(errors.ToStatus());
  return out;
}

// Writes `value`'s fields into `json` (made an object if it is not one).
template <ApiStruct T>
void EncodeTyped(const T& value, Json& json) {
  codec::Writer::Write(json, value);
}

template <ApiStruct T>
Result<T> DecodeSpec(const Object& object) {
  return DecodeTyped<T>(object.spec(), "spec");
}
template <ApiStruct T>
void EncodeSpec(const T& spec, Object& object) {
  EncodeTyped(spec, object.spec());
}
template <ApiStruct T>
Result<T> DecodeStatus(const Object& object) {
  return DecodeTyped<T>(object.status(), "status");
}
template <ApiStruct T>
void EncodeStatus(const T& status, Object& object) {
  EncodeTyped(status, object.status());
}

}  // namespace warren::api
