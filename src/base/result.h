#pragma once

#include <type_traits>
#include <utility>
#include <variant>

#include "base/check.h"
#include "base/status.h"

namespace warren {

// Either a value of T or a non-ok Status. The value accessors CHECK that a value is present:
// reading the value of a failed Result is a bug, not an expected failure.
// Thread-compatible (a value type).
template <typename T>
class [[nodiscard]] Result {
 public:
  static_assert(!std::is_same_v<std::decay_t<T>, Status>, "Result<Status> makes no sense");

  // Implicit from a value and from a failed status, so functions can `return value;` and
  // `return NotFoundError(...)`.
  Result(const T& value) : v_(value) {}            // NOLINT
  Result(T&& value) : v_(std::move(value)) {}      // NOLINT
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    CHECK(!std::get<Status>(v_).ok());
  }
  template <typename U, typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                                    !std::is_same_v<std::decay_t<U>, T> &&
                                                    !std::is_same_v<std::decay_t<U>, Status> &&
                                                    !std::is_same_v<std::decay_t<U>, Result>>>
  Result(U&& value) : v_(T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }

  // The failure, or Ok when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & {
    CheckValue();
    return std::get<T>(v_);
  }
  const T& value() const& {
    CheckValue();
    return std::get<T>(v_);
  }
  T&& value() && {
    CheckValue();
    return std::get<T>(std::move(v_));
  }
  T value_or(T fallback) const& { return ok() ? std::get<T>(v_) : std::move(fallback); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void CheckValue() const {
    CHECK_MSG(ok(), "value() of a failed Result: " << std::get<Status>(v_).ToString());
  }
  std::variant<T, Status> v_;
};

}  // namespace warren

#define WARREN_CONCAT_INNER_(a, b) a##b
#define WARREN_CONCAT_(a, b) WARREN_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` (a Status) is not ok.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::warren::Status warren_status_ = (expr);        \
    if (!warren_status_.ok()) return warren_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result or returns its failure.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(WARREN_CONCAT_(warren_result_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()
