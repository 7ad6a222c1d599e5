#include "api/status_object.h"

#include <fmt/format.h>

namespace warren::api {
namespace {

bool IsAdmissionFailure(const std::string& message) {
  return message.find(" is invalid: ") != std::string::npos;
}

}  // namespace

Json MakeStatusObject(int code, std::string_view reason, std::string_view message,
                      const StatusDetails& details) {
  Json s = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
            {"status", "Failure"}, {"message", message}, {"reason", reason},
            {"code", code}};
  Json d = Json::object();
  if (!details.name.empty()) d["name"] = details.name;
  if (!details.group.empty()) d["group"] = details.group;
  if (!details.kind.empty()) d["kind"] = details.kind;
  if (!d.empty()) s["details"] = std::move(d);
  return s;
}

HttpError ToHttpError(const Status& status, const StatusDetails& details) {
  HttpError e;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      if (IsAdmissionFailure(status.message())) {
        e.code = 422;
        e.reason = "Invalid";
      } else {
        e.code = 400;
        e.reason = "BadRequest";
      }
      break;
    case StatusCode::kFailedPrecondition:
      e.code = 400;
      e.reason = "BadRequest";
      break;
    case StatusCode::kNotFound:
      e.code = 404;
      e.reason = "NotFound";
      break;
    case StatusCode::kAlreadyExists:
      e.code = 409;
      e.reason = "AlreadyExists";
      break;
    case StatusCode::kAborted:
      e.code = 409;
      e.reason = "Conflict";
      break;
    case StatusCode::kOutOfRange:
      e.code = 410;
      e.reason = "Expired";
      break;
    case StatusCode::kResourceExhausted:
      e.code = 429;
      e.reason = "TooManyRequests";
      break;
    case StatusCode::kPermissionDenied:
      e.code = 403;
      e.reason = "Forbidden";
      break;
    case StatusCode::kUnauthenticated:
      e.code = 401;
      e.reason = "Unauthorized";
      break;
    case StatusCode::kUnimplemented:
      e.code = 405;
      e.reason = "MethodNotAllowed";
      break;
    case StatusCode::kUnavailable:
      e.code = 503;
      e.reason = "ServiceUnavailable";
      break;
    case StatusCode::kDeadlineExceeded:
      e.code = 504;
      e.reason = "Timeout";
      break;
    default:
      e.code = 500;
      e.reason = "InternalError";
      break;
  }
  e.status = MakeStatusObject(e.code, e.reason, status.message(), details);
  return e;
}

std::string ReasonOf(std::string_view body) {
  auto j = ParseJson(body);
  if (!j.ok() || !j->is_object() || j->value("kind", "") != "Status") return "";
  return j->value("reason", "");
}

Status FromHttpError(int http_code, std::string_view body) {
  StatusCode code;
  switch (http_code) {
    case 400:
    case 413:
    case 415:
    case 422:
      code = StatusCode::kInvalidArgument;
      break;
    case 401:
      code = StatusCode::kUnauthenticated;
      break;
    case 403:
      code = StatusCode::kPermissionDenied;
      break;
    case 404:
      code = StatusCode::kNotFound;
      break;
    case 405:
      code = StatusCode::kUnimplemented;
      break;
    case 409:
      code = ReasonOf(body) == "AlreadyExists" ? StatusCode::kAlreadyExists : StatusCode::kAborted;
      break;
    case 410:
      code = StatusCode::kOutOfRange;
      break;
    case 429:
      code = StatusCode::kResourceExhausted;
      break;
    case 503:
      code = StatusCode::kUnavailable;
      break;
    case 504:
      code = StatusCode::kDeadlineExceeded;
      break;
    default:
      code = StatusCode::kInternal;
      break;
  }
  auto j = ParseJson(body);
  if (j.ok() && j->is_object() && j->value("kind", "") == "Status" && (*j)["message"].is_string()) {
    return Status(code, (*j)["message"].get<std::string>());
  }
  std::string text(body.substr(0, 200));
  return Status(code, fmt::format("the server responded with HTTP {}{}{}", http_code,
                                  text.empty() ? "" : ": ", text));
}

}  // namespace warren::api
