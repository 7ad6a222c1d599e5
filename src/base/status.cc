#include "base/status.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace warren {
namespace {

struct CodeInfo {
  StatusCode code;
  std::string_view name;
  std::string_view connect;
  int http;
};

constexpr std::array<CodeInfo, 17> kCodes = {{
    {StatusCode::kOk, "OK", "ok", 200},
    {StatusCode::kCancelled, "CANCELLED", "canceled", 499},
    {StatusCode::kUnknown, "UNKNOWN", "unknown", 500},
    {StatusCode::kInvalidArgument, "INVALID_ARGUMENT", "invalid_argument", 400},
    {StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED", "deadline_exceeded", 504},
    {StatusCode::kNotFound, "NOT_FOUND", "not_found", 404},
    {StatusCode::kAlreadyExists, "ALREADY_EXISTS", "already_exists", 409},
    {StatusCode::kPermissionDenied, "PERMISSION_DENIED", "permission_denied", 403},
    {StatusCode::kResourceExhausted, "RESOURCE_EXHAUSTED", "resource_exhausted", 429},
    {StatusCode::kFailedPrecondition, "FAILED_PRECONDITION", "failed_precondition", 400},
    {StatusCode::kAborted, "ABORTED", "aborted", 409},
    {StatusCode::kOutOfRange, "OUT_OF_RANGE", "out_of_range", 400},
    {StatusCode::kUnimplemented, "UNIMPLEMENTED", "unimplemented", 501},
    {StatusCode::kInternal, "INTERNAL", "internal", 500},
    {StatusCode::kUnavailable, "UNAVAILABLE", "unavailable", 503},
    {StatusCode::kDataLoss, "DATA_LOSS", "data_loss", 500},
    {StatusCode::kUnauthenticated, "UNAUTHENTICATED", "unauthenticated", 401},
}};

const CodeInfo& Info(StatusCode code) {
  auto i = static_cast<size_t>(code);
  return i < kCodes.size() ? kCodes[i] : kCodes[static_cast<size_t>(StatusCode::kUnknown)];
}

}  // namespace

std::string Status::ToString() const {
  if (ok()) return "OK";
  return fmt::format("{}: {}", StatusCodeName(code_), message_);
}

Status Status::WithPrefix(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(code_, fmt::format("{}: {}", prefix, message_));
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }

Status CancelledError(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
Status UnknownError(std::string m) { return {StatusCode::kUnknown, std::move(m)}; }
Status InvalidArgumentError(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
Status DeadlineExceededError(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
Status AlreadyExistsError(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
Status PermissionDeniedError(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
Status ResourceExhaustedError(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
Status AbortedError(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
Status OutOfRangeError(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
Status UnimplementedError(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
Status DataLossError(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
Status UnauthenticatedError(std::string m) { return {StatusCode::kUnauthenticated, std::move(m)}; }

Status ErrnoError(std::string_view what, int err) {
  StatusCode code = StatusCode::kInternal;
  switch (err) {
    case ENOENT:
    case ESRCH:
    case ENODEV:  // the kernel's answer for a network link (or device) it does not know
      code = StatusCode::kNotFound;
      break;
    case EEXIST:
      code = StatusCode::kAlreadyExists;
      break;
    case EACCES:
    case EPERM:
    case EROFS:
      code = StatusCode::kPermissionDenied;
      break;
    case EINVAL:
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP:
    case EXDEV:
      code = StatusCode::kInvalidArgument;
      break;
    case ENOSPC:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case EAGAIN:
    case EDQUOT:
      code = StatusCode::kResourceExhausted;
      break;
    case ETIMEDOUT:
      code = StatusCode::kDeadlineExceeded;
      break;
    case ECONNREFUSED:
    case ECONNRESET:
    case EPIPE:
    case EBUSY:
      code = StatusCode::kUnavailable;
      break;
    case ENOTEMPTY:
      code = StatusCode::kFailedPrecondition;
      break;
    case ENOSYS:
    case EOPNOTSUPP:
      code = StatusCode::kUnimplemented;
      break;
    default:
      break;
  }
  return Status(code, fmt::format("{}: {}", what, std::strerror(err)));
}

std::string_view StatusCodeName(StatusCode code) { return Info(code).name; }
int HttpStatusFromCode(StatusCode code) { return Info(code).http; }
std::string_view ConnectCodeName(StatusCode code) { return Info(code).connect; }

StatusCode CodeFromConnectName(std::string_view name) {
  for (const auto& c : kCodes) {
    if (c.connect == name) return c.code;
  }
  return StatusCode::kUnknown;
}

StatusCode CodeFromHttpStatus(int http_status) {
  // The Connect protocol's fallback table, used when an error body carries no code.
  switch (http_status) {
    case 400:
      return StatusCode::kInternal;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return StatusCode::kUnavailable;
    default:
      return http_status >= 200 && http_status < 300 ? StatusCode::kOk : StatusCode::kUnknown;
  }
}

}  // namespace warren
