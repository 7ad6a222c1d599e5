#pragma once

#include <chrono>
#include <functional>
#include <string_view>

#include "api/kinds.h"
#include "api/object.h"
#include "base/result.h"
#include "store/store.h"

namespace warren::server::e2b {

// Decides, for each state of the object, whether the wait is over: true = done, false = keep
// waiting, an error = give up with it (e.g. the sandbox failed).
using SandboxCheck = std::function<Result<bool>(const api::Object& sandbox)>;

// Watches one Sandbox (from its current state on) until `check` says done, fails, or `timeout`
// passes. `what` names the awaited state for messages ("Running and Ready"). Errors:
// DeadlineExceeded naming the last phase seen, NotFound when the object is deleted meanwhile,
// Cancelled when `abandoned` (checked a few times a second) turns true — the client went away —
// and whatever `check` returns. Blocks; call it from the blocking pool.
Result<api::Object> WaitForSandbox(store::Store& store, std::string_view namespace_,
                                   std::string_view name, const SandboxCheck& check,
                                   std::chrono::milliseconds timeout, std::string_view what,
                                   const std::function<bool()>& abandoned = nullptr);
// The same for an object of any kind (messages name it by its singular, e.g. "checkpoint").
Result<api::Object> WaitForObject(store::Store& store, const api::KindInfo& kind,
                                  std::string_view namespace_, std::string_view name,
                                  const SandboxCheck& check, std::chrono::milliseconds timeout,
                                  std::string_view what,
                                  const std::function<bool()>& abandoned = nullptr);

}  // namespace warren::server::e2b
