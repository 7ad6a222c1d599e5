#pragma once

#include "base/status.h"
#include "net/http.h"

namespace warren::server::e2b {

// The HTTP status E2B clients expect for a failure: the canonical mapping, except that a
// conflict with the sandbox's state (Aborted, AlreadyExists, FailedPrecondition) is 409 — what
// the SDKs read as "already paused" — and a deadline is 504.
int E2bHttpStatus(const Status& status);

// {"code": <status>, "message": "..."} with Content-Type application/json: the one error body
// both SDKs parse (the JS SDK reads `code` from the body, Python requires both keys).
net::Response ErrorResponse(const Status& status);
net::Response ErrorResponse(int http_status, std::string_view message);

}  // namespace warren::server::e2b
