#pragma once

// How the rollout verbs wait (`set image -w`, `restart`): a --timeout in Go duration form, 0 =
// no limit, and a poll loop over a condition.

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "base/result.h"

namespace warren::cli {

// "5m" → 5 minutes, "0" → no limit (nullopt); a malformed or negative value is
// InvalidArgument naming --timeout.
Result<std::optional<std::chrono::milliseconds>> ParseTimeout(const std::string& text);

// Calls `done` every `interval` until it returns true (→ Ok), returns an error (→ that error) or
// `timeout` passes (→ DeadlineExceeded "timed out after T waiting for WHAT").
Status PollUntil(const std::function<Result<bool>()>& done,
                 std::optional<std::chrono::milliseconds> timeout,
                 std::chrono::milliseconds interval, const std::string& what);

}  // namespace warren::cli
