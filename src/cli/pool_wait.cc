#include "cli/pool_wait.h"

#include <vector>

#include "api/kinds.h"
#include "base/strings.h"
#include "cli/rollout_status.h"
#include "cli/wait_flags.h"

namespace warren::cli {

Status WaitForSandboxSet(
    App& app, ApiClient& client, const std::string& name,
    std::optional<std::chrono::milliseconds> timeout,
    const std::function<std::pair<bool, std::string>(const api::Json&)>& progress,
    const std::string& what) {
  constexpr std::chrono::milliseconds kPollInterval{1000};
  const std::string members_query =
      "labelSelector=" + base::PercentEncode("agents.kruise.io/sandbox-pool=" + name);
  std::string last;
  // Why members were not ready, as last seen while waiting: a pool that replaces a failing
  // member may hold none at the instant the wait ends, and the user still needs the reason.
  std::vector<std::string> unready;
  Status waited = PollUntil(
      [&]() -> Result<bool> {
        ASSIGN_OR_RETURN(api::Json now, client.Get(api::SandboxSetKind(), app.Namespace(), name));
        auto [done, line] = progress(now);
        if (line != last) {
          app.out() << line << "\n" << std::flush;
          last = line;
        }
        if (!done) {
          auto members = client.List(api::SandboxKind(), app.Namespace(), members_query);
          if (members.ok()) {
            auto seen = UnreadyMembers((*members)["items"], 5);
            if (!seen.empty()) unready = std::move(seen);
          }
        }
        return done;
      },
      timeout, kPollInterval, what);
  if (waited.ok()) return waited;
  for (const std::string& line : unready) app.out() << "  " << line << "\n";
  return waited;
}

}  // namespace warren::cli
