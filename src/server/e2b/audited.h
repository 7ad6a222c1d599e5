#pragma once

#include <memory>
#include <string>

#include "audit/journal.h"
#include "server/e2b/authed_route.h"
#include "server/e2b/sandbox_service.h"

namespace warren::server::e2b {

// Wraps a lifecycle handler so that each call lands in the audit journal of the sandbox it was
// about: the key's name and id, its team, the operation, the HTTP status (and the error's
// message). The sandbox is the `{id}` of the path, or for a create the `sandboxID` of a 201
// answer. Refused calls are recorded too (a 409 pause), except a 404: there was no such sandbox
// for the caller (another team's, a typo), so there is no journal to write to. A team key's entry
// goes to its own namespace's journal; an admin's to the namespace of the sandbox it named.
// `journal` null: the handler as it is.
AuthedHandler Audited(std::shared_ptr<audit::Journal> journal,
                      std::shared_ptr<SandboxService> service, std::string operation,
                      AuthedHandler handler);

}  // namespace warren::server::e2b
