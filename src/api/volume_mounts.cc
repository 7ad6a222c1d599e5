#include "api/volume_mounts.h"

#include <fmt/format.h>

#include <set>

#include "api/types/labels.h"
#include "api/validation.h"

namespace warren::api {
namespace {

bool Under(std::string_view path, std::string_view dir) {
  return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

}  // namespace

Result<std::vector<VolumeMountRequest>> ParseVolumeMounts(const Json& mounts,
                                                          std::string_view field) {
  std::vector<VolumeMountRequest> out;
  if (mounts.is_null()) return out;
  if (!mounts.is_array()) {
    return InvalidArgumentError(
        fmt::format("{} must be an array, got {}", field, JsonTypeName(mounts)));
  }
  if (mounts.size() > kMaxVolumeMounts) {
    return InvalidArgumentError(
        fmt::format("{} has {} entries; at most {}", field, mounts.size(), kMaxVolumeMounts));
  }
  std::set<std::string> paths;
  for (size_t i = 0; i < mounts.size(); ++i) {
    const Json& m = mounts[i];
    const std::string where = fmt::format("{}[{}]", field, i);
    if (!m.is_object()) return InvalidArgumentError(where + " must be an object {name, path}");
    auto name = m.find("name");
    auto path = m.find("path");
    if (name == m.end() || !name->is_string() || name->get<std::string>().empty()) {
      return InvalidArgumentError(where + ".name is required (a volume's name)");
    }
    if (path == m.end() || !path->is_string()) {
      return InvalidArgumentError(where + ".path is required (an absolute path)");
    }
    VolumeMountRequest mount{name->get<std::string>(), path->get<std::string>()};
    if (auto err = CheckDns1123Label(mount.name)) {
      return InvalidArgumentError(
          fmt::format("{}.name \"{}\" is not a volume name: {}", where, mount.name, *err));
    }
    const std::string& p = mount.path;
    if (p.size() < 2 || p.size() > 1024 || p.front() != '/' || p.back() == '/' ||
        p.find("//") != std::string::npos || p.find("/./") != std::string::npos ||
        p.find("/../") != std::string::npos || p.ends_with("/..") || p.ends_with("/.") ||
        p.find('\0') != std::string::npos) {
      return InvalidArgumentError(fmt::format(
          "{}.path \"{}\" must be an absolute path below / without \".\" or \"..\"", where, p));
    }
    // Warren's own directory inside every sandbox (envd, the command log) and the kernel's.
    for (std::string_view reserved : {"/.warren", "/proc", "/dev", "/sys"}) {
      if (Under(p, reserved)) {
        return InvalidArgumentError(
            fmt::format("{}.path \"{}\" is reserved (/.warren, /proc, /dev, /sys)", where, p));
      }
    }
    if (!paths.insert(p).second) {
      return InvalidArgumentError(fmt::format("{}.path \"{}\" is mounted twice", where, p));
    }
    out.push_back(std::move(mount));
  }
  return out;
}

Result<std::vector<VolumeMountRequest>> VolumeMountsOf(const Object& sandbox) {
  auto it = sandbox.metadata.annotations.find(annotations::kVolumeMounts);
  if (it == sandbox.metadata.annotations.end() || it->second.empty()) {
    return std::vector<VolumeMountRequest>{};
  }
  const std::string field = fmt::format("metadata.annotations[{}]", annotations::kVolumeMounts);
  auto json = ParseJson(it->second);
  if (!json.ok()) return InvalidArgumentError(field + " must be a JSON array of {name, path}");
  return ParseVolumeMounts(*json, field);
}

std::string VolumeMountsText(const std::vector<VolumeMountRequest>& mounts) {
  Json a = Json::array();
  for (const VolumeMountRequest& m : mounts) a.push_back({{"name", m.name}, {"path", m.path}});
  return DumpJson(a);
}

}  // namespace warren::api
