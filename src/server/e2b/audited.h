#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "audit/journal.h"
#include "server/e2b/authed_route.h"
#include "server/e2b/sandbox_service.h"

namespace warren::server::e2b {

// Wraps a lifecycle handler so that each call lands in the audit journal of the sandbox it was
// about: the key's name and id, its team, the operation, the HTTP status (and the error's
// message). The sandbox is the `{id}` of the path, or for a create the `sandboxID` of a 201
// answer, looked up as the caller sees it: the journal is that sandbox's (its namespace, its
// canonical id). Refused calls on it are recorded too (a 409 pause); a call naming no sandbox
// the caller can see (another team's, a typo) is recorded nowhere. `journal` null: the handler
// as it is.
// The journal of a Sandbox object: its namespace and canonical sandbox id; nullopt when it has
// no sandbox id yet.
std::optional<std::pair<std::string, std::string>> JournalKeyOf(const api::Object& sandbox);

AuthedHandler Audited(std::shared_ptr<audit::Journal> journal,
                      std::shared_ptr<SandboxService> service, std::string operation,
                      AuthedHandler handler);

}  // namespace warren::server::e2b
