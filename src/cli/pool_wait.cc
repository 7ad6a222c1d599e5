#include "cli/pool_wait.h"

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
  std::string last;
  Status waited = PollUntil(
      [&]() -> Result<bool> {
        ASSIGN_OR_RETURN(api::Json now, client.Get(api::SandboxSetKind(), app.Namespace(), name));
        auto [done, line] = progress(now);
        if (line != last) {
          app.out() << line << "\n" << std::flush;
          last = line;
        }
        return done;
      },
      timeout, kPollInterval, what);
  if (waited.ok()) return waited;
  auto members =
      client.List(api::SandboxKind(), app.Namespace(),
                  "labelSelector=" + base::PercentEncode("agents.kruise.io/sandbox-pool=" + name));
  if (members.ok()) {
    for (const std::string& line : UnreadyMembers((*members)["items"], 5)) {
      app.out() << "  " << line << "\n";
    }
  }
  return waited;
}

}  // namespace warren::cli
