#include "api/quantity.h"

#include <fmt/format.h>

namespace warren::api {
namespace {

using i128 = __int128;
constexpr i128 kLimit = static_cast<i128>(INT64_MAX);

Status Malformed(std::string_view text, std::string_view why) {
  return InvalidArgumentError(fmt::format("invalid quantity \"{}\": {}", text, why));
}

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view text) {
  std::string_view s = text;
  if (s.empty()) return Malformed(text, "empty");
  if (s.size() > 64) return Malformed(text, "too long");
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  // Mantissa: digits with an optional point; fraction digits are remembered as a divisor.
  i128 mantissa = 0;
  int frac_digits = 0;
  size_t digits = 0;
  bool point = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      if (mantissa < kLimit * 1000) {
        mantissa = mantissa * 10 + (c - '0');
        if (point) ++frac_digits;
      } else if (!point) {
        return Malformed(text, "too large");
      }  // extra fraction digits beyond precision are dropped (rounded up below)
      ++digits;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  if (digits == 0) {
    return Malformed(text, "must start with a number (e.g. \"500m\", \"1.5\", \"1Gi\")");
  }
  std::string_view suffix = s.substr(i);
  // Scale = multiplier / 10^divisor_exp, applied to thousandths.
  i128 multiplier = 1000;
  int exp10 = 0;
  if (suffix.empty()) {
  } else if (suffix == "m") {
    multiplier = 1;
  } else if (suffix == "k") {
    exp10 = 3;
  } else if (suffix == "M") {
    exp10 = 6;
  } else if (suffix == "G") {
    exp10 = 9;
  } else if (suffix == "T") {
    exp10 = 12;
  } else if (suffix == "P") {
    exp10 = 15;
  } else if (suffix == "E") {
    exp10 = 18;
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    int shift;
    switch (suffix[0]) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      case 'P':
        shift = 50;
        break;
      case 'E':
        shift = 60;
        break;
      default:
        return Malformed(text, fmt::format("unknown suffix \"{}\"", suffix));
    }
    multiplier = static_cast<i128>(1000) << shift;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view e = suffix.substr(1);
    bool eneg = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      eneg = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 3 || e.find_first_not_of("0123456789") != std::string_view::npos) {
      return Malformed(text, fmt::format("bad exponent \"{}\"", suffix));
    }
    exp10 = std::stoi(std::string(e)) * (eneg ? -1 : 1);
  } else {
    return Malformed(text,
                     fmt::format("unknown suffix \"{}\" (use m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, "
                                 "Pi, Ei or an exponent)",
                                 suffix));
  }
  // value_milli = mantissa * multiplier * 10^exp10 / 10^frac_digits, rounded up.
  int net_exp = exp10 - frac_digits;
  i128 num = mantissa;
  if (num != 0) {
    if (multiplier > kLimit * 1000 / num + 1) return Malformed(text, "too large");
    num *= multiplier;
  }
  i128 den = 1;
  for (; net_exp > 0; --net_exp) {
    num *= 10;
    if (num > kLimit * 10) return Malformed(text, "too large");
  }
  for (; net_exp < 0; ++net_exp) {
    den *= 10;
    if (den > kLimit * 1000) return Malformed(text, "too small to represent");
  }
  i128 milli = (num + den - 1) / den;
  if (milli > kLimit) return Malformed(text, "too large");
  Quantity q;
  q.milli_ = static_cast<int64_t>(negative ? -milli : milli);
  q.text_ = std::string(text);
  return q;
}

Quantity Quantity::FromMilli(int64_t milli) {
  Quantity q;
  q.milli_ = milli;
  q.text_ = milli % 1000 == 0 ? std::to_string(milli / 1000) : fmt::format("{}m", milli);
  return q;
}

Quantity Quantity::FromValue(int64_t value) {
  Quantity q;
  q.milli_ = value * 1000;
  static constexpr std::pair<const char*, int> kBinary[] = {{"Ei", 60}, {"Pi", 50}, {"Ti", 40},
                                                            {"Gi", 30}, {"Mi", 20}, {"Ki", 10}};
  q.text_ = std::to_string(value);
  if (value == 0) return q;
  for (const auto& [suffix, shift] : kBinary) {
    if (value % (int64_t{1} << shift) == 0) {
      q.text_ = fmt::format("{}{}", value >> shift, suffix);
      return q;
    }
  }
  return q;
}

int64_t Quantity::Value() const {
  if (milli_ >= 0) return milli_ / 1000 + (milli_ % 1000 != 0 ? 1 : 0);
  return milli_ / 1000;
}

}  // namespace warren::api
