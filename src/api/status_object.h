#pragma once

#include <string>
#include <string_view>

#include "api/json.h"
#include "base/status.h"

namespace warren::api {

// What a failed request names, for the Status object's details.
struct StatusDetails {
  std::string name;
  std::string group;
  std::string kind;  // the resource (plural), as Kubernetes does
};

// A failure as the resource API reports it: the HTTP code, the Kubernetes reason and a
// Kubernetes Status object. The mapping (one table):
//   InvalidArgument  400 BadRequest, or 422 Invalid when admission rejected the object
//                    ("... is invalid: field: message")
//   NotFound 404 NotFound · AlreadyExists 409 AlreadyExists · Aborted 409 Conflict ·
//   OutOfRange 410 Expired · ResourceExhausted 429 TooManyRequests (413
//   RequestEntityTooLarge for bodies, via MakeStatusObject(413, ...)) · PermissionDenied 403
//   Forbidden · Unauthenticated 401 Unauthorized · FailedPrecondition 400 BadRequest ·
//   Unimplemented 405 MethodNotAllowed · Unavailable 503 ServiceUnavailable ·
//   DeadlineExceeded 504 Timeout · everything else 500 InternalError.
struct HttpError {
  int code = 500;
  std::string reason;
  Json status;  // {"kind":"Status","apiVersion":"v1","status":"Failure",...}
};
HttpError ToHttpError(const Status& status, const StatusDetails& details = {});

// A Status object with an explicit code and reason (413, 415, ...).
Json MakeStatusObject(int code, std::string_view reason, std::string_view message,
                      const StatusDetails& details = {});

// Reads a Status object from an error response body (the CLI's side). Returns a Status with
// the code mapped back and the server's message; a body that is not a Status gives a generic
// message with the HTTP code.
Status FromHttpError(int http_code, std::string_view body);
// The reason of an error response ("NotFound"), or "" when the body is not a Status.
std::string ReasonOf(std::string_view body);

}  // namespace warren::api
