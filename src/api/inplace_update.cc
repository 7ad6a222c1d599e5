#include "api/inplace_update.h"

#include <fmt/format.h>

#include "api/typed_codec.h"

namespace warren::api {
namespace {

template <class T>
Json Encoded(const T& value) {
  Json j = Json::object();
  EncodeTyped(value, j);
  return j;
}

// cpu and memory may change value in place; adding or removing one, or changing any other
// resource (ephemeral-storage sizes the writable layer at creation), does not qualify.
std::string ResourcesNotInPlace(const std::map<std::string, Quantity>& from,
                                const std::map<std::string, Quantity>& to, const std::string& path,
                                bool* changed) {
  for (const auto& [name, q] : from) {
    auto it = to.find(name);
    if (it == to.end()) return fmt::format("{}.{} removed", path, name);
    if (it->second == q) continue;
    if (name != "cpu" && name != "memory") return fmt::format("{}.{} changed", path, name);
    *changed = true;
  }
  for (const auto& [name, q] : to) {
    if (!from.count(name)) return fmt::format("{}.{} added", path, name);
  }
  return "";
}

}  // namespace

uint32_t Fnv32a(std::string_view data) {
  uint32_t h = 2166136261u;
  for (unsigned char c : data) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string PodTemplateHash(const PodTemplateSpec& pod_template) {
  return fmt::format("{:08x}", Fnv32a(DumpJson(Encoded(pod_template))));
}

TemplateChange ClassifyTemplateChange(const PodTemplateSpec& from, const PodTemplateSpec& to) {
  TemplateChange c;
  c.metadata = Encoded(from.metadata) != Encoded(to.metadata);
  const auto& a = from.spec.containers;
  const auto& b = to.spec.containers;
  if (a.size() != b.size()) {
    c.not_in_place = fmt::format("spec.containers: {} containers became {}", a.size(), b.size());
    return c;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string path = fmt::format("spec.containers[{}]", i);
    if (a[i].name != b[i].name) {
      c.not_in_place = path + ".name changed";
      return c;
    }
    if (a[i].image != b[i].image) c.image = true;
    for (const auto& [which, fa, fb] :
         {std::tuple{"requests", &a[i].resources.requests, &b[i].resources.requests},
          std::tuple{"limits", &a[i].resources.limits, &b[i].resources.limits}}) {
      std::string why =
          ResourcesNotInPlace(*fa, *fb, fmt::format("{}.resources.{}", path, which), &c.resources);
      if (!why.empty()) {
        c.not_in_place = std::move(why);
        return c;
      }
    }
    // Everything else of the container must be as it was: compare the rest field by field so
    // the message names the first one that moved.
    Container x = a[i], y = b[i];
    x.image = y.image = "";
    x.resources = y.resources = {};
    const Json jx = Encoded(x), jy = Encoded(y);
    if (jx != jy) {
      for (auto it = jx.begin(); it != jx.end(); ++it) {
        if (!jy.contains(it.key()) || jy.at(it.key()) != it.value()) {
          c.not_in_place = fmt::format("{}.{} changed", path, it.key());
          return c;
        }
      }
      for (auto it = jy.begin(); it != jy.end(); ++it) {
        if (!jx.contains(it.key())) {
          c.not_in_place = fmt::format("{}.{} changed", path, it.key());
          return c;
        }
      }
    }
  }
  if (Encoded(from.spec).value("volumes", Json()) != Encoded(to.spec).value("volumes", Json())) {
    c.not_in_place = "spec.volumes changed";
  } else if (from.spec.runtime_class_name != to.spec.runtime_class_name) {
    c.not_in_place = "spec.runtimeClassName changed";
  }
  return c;
}

}  // namespace warren::api
