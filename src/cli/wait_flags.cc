#include "cli/wait_flags.h"

#include <fmt/format.h>

#include <thread>

#include "base/time_format.h"

namespace warren::cli {

Result<std::optional<std::chrono::milliseconds>> ParseTimeout(const std::string& text) {
  if (text == "0") return std::optional<std::chrono::milliseconds>();
  auto d = base::ParseDuration(text);
  if (!d || d->count() < 0) {
    return InvalidArgumentError(
        fmt::format("--timeout \"{}\": a duration such as 90s or 5m (0 = no limit)", text));
  }
  if (d->count() == 0) return std::optional<std::chrono::milliseconds>();
  return std::optional<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(*d));
}

Status PollUntil(const std::function<Result<bool>()>& done,
                 std::optional<std::chrono::milliseconds> timeout,
                 std::chrono::milliseconds interval, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    ASSIGN_OR_RETURN(bool finished, done());
    if (finished) return Status::Ok();
    if (timeout && std::chrono::steady_clock::now() - start >= *timeout) {
      return DeadlineExceededError(
          fmt::format("timed out after {}s waiting for {}",
                      std::chrono::duration_cast<std::chrono::seconds>(*timeout).count(), what));
    }
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace warren::cli
