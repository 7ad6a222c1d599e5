#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::api {

// A Kubernetes resource quantity ("500m", "2", "1.5", "1Gi", "128974848", "129e6", "123Mi").
// Held as an exact count of thousandths (so CPU millicores and memory bytes both fit), rounded
// up like Kubernetes' MilliValue; values beyond ±9.2e15 units are rejected. The text the user
// wrote is kept for round-tripping. Value type.
class Quantity {
 public:
  Quantity() = default;

  // Malformed or out-of-range text → InvalidArgument quoting it.
  static Result<Quantity> Parse(std::string_view text);
  // Canonical forms: FromMilli(500) is "500m", FromMilli(2000) is "2"; FromBytes(1<<30) is
  // "1Gi", FromBytes(1000) is "1k"... (the largest exact binary or decimal suffix).
  static Quantity FromMilli(int64_t milli);
  static Quantity FromValue(int64_t value);

  int64_t MilliValue() const { return milli_; }
  // Whole units, rounded up ("500m" → 1).
  int64_t Value() const;
  const std::string& ToString() const { return text_; }
  bool IsZero() const { return milli_ == 0; }

  friend bool operator==(const Quantity& a, const Quantity& b) { return a.milli_ == b.milli_; }
  friend auto operator<=>(const Quantity& a, const Quantity& b) { return a.milli_ <=> b.milli_; }

 private:
  int64_t milli_ = 0;
  std::string text_ = "0";
};

}  // namespace warren::api
