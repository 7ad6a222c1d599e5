#pragma once

#include <string>
#include <string_view>

#include "audit/journal.h"
#include "base/status.h"

namespace warren::node {

// Moves what envd recorded inside a sandbox (envd/audit_log.h: `<sandbox dir>/log/audit.jsonl`)
// into the host's audit journal, from where the last collection stopped. The file is written by
// the sandbox, so it is opened without following links, read a bounded amount per call, and each
// line is re-encoded from the known actions and fields only (source "envd", actor "envd", team
// = the sandbox's namespace); anything else is dropped. A file that shrank was started over by
// envd: collection starts again from its beginning. Returns how many entries were added.
Result<size_t> CollectEnvdAudit(audit::Journal& journal, std::string_view namespace_,
                                std::string_view sandbox_id, const std::string& sandbox_dir);

}  // namespace warren::node
