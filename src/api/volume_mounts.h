#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "api/json.h"
#include "api/object.h"
#include "base/result.h"

namespace warren::api {

// E2B's volumeMounts: a team Volume by name at an absolute path inside the sandbox. They come
// with an E2B create and ride on the Sandbox as the annotation warren.dev/volume-mounts (the
// same JSON), which the node mounts; both are checked here by the same rules, so a tenant
// writing the annotation through the resource API gets no more than the E2B create allows.
struct VolumeMountRequest {
  std::string name;
  std::string path;
};

inline constexpr size_t kMaxVolumeMounts = 16;

// [{name, path}]: at most kMaxVolumeMounts; name a DNS-1123 label; path absolute, below "/",
// without "." or ".." components, not under /.warren, /proc, /dev or /sys, each once.
// InvalidArgument naming `field` and the entry ("volumeMounts[1].path ...").
Result<std::vector<VolumeMountRequest>> ParseVolumeMounts(const Json& mounts,
                                                          std::string_view field);
// The Sandbox's annotation (none when absent), by the same rules.
Result<std::vector<VolumeMountRequest>> VolumeMountsOf(const Object& sandbox);
// The annotation's text for `mounts`.
std::string VolumeMountsText(const std::vector<VolumeMountRequest>& mounts);

}  // namespace warren::api
