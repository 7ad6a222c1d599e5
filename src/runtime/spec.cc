#include "runtime/spec.h"

#include <fmt/format.h>

#include "base/strings.h"
#include "os/cgroup.h"

namespace warren::runtime {
namespace {

constexpr int64_t kMinMemoryBytes = 4 << 20;
constexpr int64_t kMinCpuMillicores = 10;  // the kernel's smallest CFS quota is 1 ms per 100 ms
constexpr int64_t kMaxCpuMillicores = 1'000'000;
constexpr int64_t kMaxPids = 4'194'304;  // PID_MAX_LIMIT

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// Absolute, no NUL, no ".." component.
Status CheckPath(std::string_view what, std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return InvalidArgumentError(fmt::format("{} '{}' must be an absolute path", what, path));
  }
  if (HasNul(path)) return InvalidArgumentError(fmt::format("{} contains a NUL byte", what));
  for (std::string_view part : base::Split(path, '/')) {
    if (part == "..") {
      return InvalidArgumentError(fmt::format("{} '{}' must not contain '..'", what, path));
    }
  }
  if (path.size() >= 4096) return InvalidArgumentError(fmt::format("{} is too long", what));
  return Status::Ok();
}

}  // namespace

bool IsValidSandboxName(std::string_view id) {
  if (id.empty() || id.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(id.front()) || !alnum(id.back())) return false;
  for (char c : id) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

Status ValidateSpec(const SandboxSpec& spec) {
  if (!IsValidSandboxName(spec.id)) {
    return InvalidArgumentError(fmt::format(
        "sandbox id '{}' must be 1-63 characters of [a-z0-9-], starting and ending with a "
        "letter or digit",
        spec.id));
  }
  if (spec.layers.empty()) {
    return InvalidArgumentError(fmt::format("sandbox {}: no image layers", spec.id));
  }
  for (const std::string& layer : spec.layers) {
    RETURN_IF_ERROR(CheckPath("image layer", layer).WithPrefix("sandbox " + spec.id));
  }
  RETURN_IF_ERROR(CheckPath("writable_dir", spec.writable_dir).WithPrefix("sandbox " + spec.id));
  if (spec.cpu_weight != 0 &&
      (spec.cpu_weight < os::kMinCpuWeight || spec.cpu_weight > os::kMaxCpuWeight)) {
    return InvalidArgumentError(
        fmt::format("sandbox {}: cpu_weight {} is outside {}-{} (0: the default)", spec.id,
                    spec.cpu_weight, os::kMinCpuWeight, os::kMaxCpuWeight));
  }
  if (spec.command.empty() || spec.command[0].empty()) {
    return InvalidArgumentError(fmt::format("sandbox {}: empty command", spec.id));
  }
  for (const std::string& arg : spec.command) {
    if (HasNul(arg)) {
      return InvalidArgumentError(fmt::format("sandbox {}: command contains a NUL byte", spec.id));
    }
  }
  for (const std::string& kv : spec.env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || HasNul(kv)) {
      // Never echo the value: environments carry secrets.
      return InvalidArgumentError(fmt::format("sandbox {}: environment entry '{}' is not KEY=VALUE",
                                              spec.id, kv.substr(0, std::min<size_t>(eq, 64))));
    }
  }
  RETURN_IF_ERROR(CheckPath("working_dir", spec.working_dir).WithPrefix("sandbox " + spec.id));
  for (const BindMount& m : spec.mounts) {
    RETURN_IF_ERROR(CheckPath("bind mount source", m.source).WithPrefix("sandbox " + spec.id));
    RETURN_IF_ERROR(CheckPath("bind mount target", m.target).WithPrefix("sandbox " + spec.id));
    if (base::SplitNonEmpty(m.target, '/').empty()) {
      return InvalidArgumentError(
          fmt::format("sandbox {}: bind mount target must not be '/'", spec.id));
    }
    if (!m.sub_path.empty()) {
      bool dotdot = false;
      for (std::string_view part : base::Split(m.sub_path, '/')) dotdot = dotdot || part == "..";
      if (m.sub_path.front() == '/' || dotdot || HasNul(m.sub_path) || m.sub_path.size() >= 4096) {
        return InvalidArgumentError(
            fmt::format("sandbox {}: bind mount subPath '{}' must be relative, without '..'",
                        spec.id, m.sub_path));
      }
    }
  }
  if (spec.user.uid == UINT32_MAX || spec.user.gid == UINT32_MAX) {
    return InvalidArgumentError(fmt::format("sandbox {}: uid/gid 4294967295 is invalid", spec.id));
  }
  const Resources& r = spec.resources;
  if (r.cpu_millicores < 0 || (r.cpu_millicores > 0 && r.cpu_millicores < kMinCpuMillicores) ||
      r.cpu_millicores > kMaxCpuMillicores) {
    return InvalidArgumentError(
        fmt::format("sandbox {}: cpu limit {}m is impossible (0 for none, or {}m to {}m)", spec.id,
                    r.cpu_millicores, kMinCpuMillicores, kMaxCpuMillicores));
  }
  if (r.memory_bytes < 0 || (r.memory_bytes > 0 && r.memory_bytes < kMinMemoryBytes)) {
    return InvalidArgumentError(
        fmt::format("sandbox {}: memory limit {} bytes is impossible (0 for none, or at least {})",
                    spec.id, r.memory_bytes, kMinMemoryBytes));
  }
  if (r.pids < 0 || r.pids == 1 || r.pids > kMaxPids) {
    return InvalidArgumentError(
        fmt::format("sandbox {}: pids limit {} is impossible (0 for none, or 2 to {})", spec.id,
                    r.pids, kMaxPids));
  }
  for (const os::Rlimit& l : spec.rlimits) {
    RETURN_IF_ERROR(os::ValidateRlimit(l).WithPrefix("sandbox " + spec.id));
  }
  if (!spec.log_path.empty()) {
    RETURN_IF_ERROR(CheckPath("log_path", spec.log_path).WithPrefix("sandbox " + spec.id));
  }
  if (!spec.restore_image.empty()) {
    RETURN_IF_ERROR(
        CheckPath("restore_image", spec.restore_image).WithPrefix("sandbox " + spec.id));
  }
  return Status::Ok();
}

}  // namespace warren::runtime
