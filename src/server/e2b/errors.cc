#include "server/e2b/errors.h"

#include "api/json.h"

namespace warren::server::e2b {

int E2bHttpStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kAborted:
    case StatusCode::kAlreadyExists:
    case StatusCode::kFailedPrecondition:
      return 409;
    default:
      return HttpStatusFromCode(status.code());
  }
}

net::Response ErrorResponse(int http_status, std::string_view message) {
  api::Json body = {{"code", http_status}, {"message", std::string(message)}};
  return net::Response::Json(http_status, api::DumpJson(body));
}

net::Response ErrorResponse(const Status& status) {
  return ErrorResponse(E2bHttpStatus(status), status.message());
}

}  // namespace warren::server::e2b
