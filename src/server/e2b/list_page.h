#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "server/e2b/requests.h"
#include "server/e2b/sandbox_record.h"

namespace warren::server::e2b {

struct ListPage {
  std::vector<SandboxRecord> items;
  std::string next_token;  // empty on the last page (then no X-Next-Token header is sent)
};

// Applies an E2B list query to every sandbox the caller may see: the state, metadata, template
// and startedAfter filters, one global order by start time across running and paused sandboxes
// (newest first by default; ties by sandbox id ascending; `asc` is the exact reverse), and a
// page of `limit` after the cursor. The cursor is opaque (base64url of "<start ns>__<id>", plus
// "__asc" for ascending) and names a position, not an item, so it survives the item's deletion.
// A malformed cursor, or one made for the other order → InvalidArgument "Invalid next token".
Result<ListPage> SelectPage(std::vector<SandboxRecord> records, const ListQuery& query);

}  // namespace warren::server::e2b
