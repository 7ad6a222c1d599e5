#include "os/rlimit.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <array>
#include <cerrno>
#include <utility>

#include "base/strings.h"

namespace warren::os {
namespace {

constexpr std::array<std::pair<int, std::string_view>, 16> kLimits = {{
    {RLIMIT_AS, "RLIMIT_AS"},
    {RLIMIT_CORE, "RLIMIT_CORE"},
    {RLIMIT_CPU, "RLIMIT_CPU"},
    {RLIMIT_DATA, "RLIMIT_DATA"},
    {RLIMIT_FSIZE, "RLIMIT_FSIZE"},
    {RLIMIT_LOCKS, "RLIMIT_LOCKS"},
    {RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK"},
    {RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE"},
    {RLIMIT_NICE, "RLIMIT_NICE"},
    {RLIMIT_NOFILE, "RLIMIT_NOFILE"},
    {RLIMIT_NPROC, "RLIMIT_NPROC"},
    {RLIMIT_RSS, "RLIMIT_RSS"},
    {RLIMIT_RTPRIO, "RLIMIT_RTPRIO"},
    {RLIMIT_RTTIME, "RLIMIT_RTTIME"},
    {RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING"},
    {RLIMIT_STACK, "RLIMIT_STACK"},
}};

}  // namespace

std::optional<int> RlimitFromName(std::string_view name) {
  std::string upper;
  for (char c : name) upper.push_back(static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c));
  std::string_view u = upper;
  if (u.substr(0, 7) != "RLIMIT_") upper = "RLIMIT_" + upper;
  for (const auto& [res, n] : kLimits) {
    if (n == upper) return res;
  }
  return std::nullopt;
}

std::string_view RlimitName(int resource) {
  for (const auto& [res, n] : kLimits) {
    if (res == resource) return n;
  }
  return "RLIMIT_UNKNOWN";
}

Status ValidateRlimit(const Rlimit& limit) {
  if (RlimitName(limit.resource) == "RLIMIT_UNKNOWN") {
    return InvalidArgumentError(fmt::format("unknown rlimit resource {}", limit.resource));
  }
  if (limit.soft > limit.hard) {
    return InvalidArgumentError(fmt::format("{}: soft limit {} exceeds hard limit {}",
                                            RlimitName(limit.resource), limit.soft, limit.hard));
  }
  return Status::Ok();
}

Result<Rlimit> CurrentRlimit(int resource) {
  struct rlimit r;
  if (getrlimit(static_cast<__rlimit_resource>(resource), &r) != 0) {
    return ErrnoError(fmt::format("getrlimit {}", RlimitName(resource)), errno);
  }
  return Rlimit{resource, r.rlim_cur, r.rlim_max};
}

Result<Rlimit> RaiseOpenFileLimit() {
  ASSIGN_OR_RETURN(Rlimit limit, CurrentRlimit(RLIMIT_NOFILE));
  if (limit.soft >= limit.hard) return limit;
  struct rlimit r = {limit.hard, limit.hard};
  if (setrlimit(RLIMIT_NOFILE, &r) != 0) {
    return ErrnoError(fmt::format("raise RLIMIT_NOFILE to {}", limit.hard), errno);
  }
  limit.soft = limit.hard;
  return limit;
}

int ApplyRlimitsRaw(const Rlimit* limits, size_t count, size_t* failed) noexcept {
  for (size_t i = 0; i < count; ++i) {
    struct rlimit r = {limits[i].soft, limits[i].hard};
    if (setrlimit(static_cast<__rlimit_resource>(limits[i].resource), &r) != 0) {
      if (failed != nullptr) *failed = i;
      return -errno;
    }
  }
  return 0;
}

}  // namespace warren::os
