#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace warren {

// The 16 canonical codes shared by gRPC and Connect. One table (status.cc) maps them to HTTP
// status codes and Connect code names, so every surface reports a failure the same way.
enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// The outcome of an operation that can fail for expected reasons. Cheap to copy when ok.
// Thread-compatible (a value type).
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "NOT_FOUND: sandbox 'x' not found"; "OK" when ok.
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>", keeping the code.
  Status WithPrefix(std::string_view prefix) const;

  // Explicitly discards a status whose failure the caller has decided not to act on.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);

// Constructors for each failure code.
Status CancelledError(std::string message);
Status UnknownError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);
Status UnauthenticatedError(std::string message);

// An error from errno: "<what>: <strerror(err)>", with a code chosen from the errno value
// (ENOENT → NotFound, EEXIST → AlreadyExists, EACCES/EPERM → PermissionDenied, ...).
Status ErrnoError(std::string_view what, int err);

// Upper snake case name: "NOT_FOUND".
std::string_view StatusCodeName(StatusCode code);

// The mapping table. HTTP statuses follow the Connect protocol specification (which is also what
// Kubernetes-style APIs expect: 400, 401, 403, 404, 409, 429, 500, 501, 503, 504).
int HttpStatusFromCode(StatusCode code);
// Connect code names in snake case: "not_found", "invalid_argument", "ok" for kOk.
std::string_view ConnectCodeName(StatusCode code);
// Parses a Connect code name; unknown names give kUnknown.
StatusCode CodeFromConnectName(std::string_view name);
// The code a client should assume for an HTTP status that carries no better information.
StatusCode CodeFromHttpStatus(int http_status);

}  // namespace warren
