#pragma once

// How the verbs that change a SandboxSet wait for it (`set image -w`, `scale -w`): poll the set,
// print its progress line each time it changes, and when the wait times out say which members
// were not ready and why (as last seen while waiting), as `warren status sbs` does.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "api/json.h"
#include "cli/api_client.h"
#include "cli/app.h"

namespace warren::cli {

// `progress(set)` → (done, the line to print). Ok when done; the poll's error otherwise (its
// DeadlineExceeded names `what`), after the unready members were printed.
Status WaitForSandboxSet(
    App& app, ApiClient& client, const std::string& name,
    std::optional<std::chrono::milliseconds> timeout,
    const std::function<std::pair<bool, std::string>(const api::Json&)>& progress,
    const std::string& what);

}  // namespace warren::cli
