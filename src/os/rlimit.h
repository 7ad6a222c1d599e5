#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/result.h"

namespace warren::os {

// One resource limit (setrlimit(2)).
struct Rlimit {
  int resource = 0;  // RLIMIT_*
  uint64_t soft = 0;
  uint64_t hard = 0;
  friend bool operator==(const Rlimit&, const Rlimit&) = default;
};

// "NOFILE" or "RLIMIT_NOFILE" (any case) → RLIMIT_NOFILE; nullopt for unknown names.
std::optional<int> RlimitFromName(std::string_view name);
// "RLIMIT_NOFILE".
std::string_view RlimitName(int resource);
// InvalidArgument when the resource is unknown or soft > hard.
Status ValidateRlimit(const Rlimit& limit);
// The calling process's current limit.
Result<Rlimit> CurrentRlimit(int resource);

// Raises the calling process's soft open-file limit (RLIMIT_NOFILE) to its hard limit, so a
// server can hold as many connections as the administrator allowed (systemd and most shells
// start processes at a soft 1024). Returns the limit now in force. Inherited by children: the
// runtime sets each sandbox's own limits.
Result<Rlimit> RaiseOpenFileLimit();

// Child side (async-signal-safe): applies each limit; returns 0 or -errno with *failed set to
// the index of the limit that failed.
int ApplyRlimitsRaw(const Rlimit* limits, size_t count, size_t* failed) noexcept;

}  // namespace warren::os
