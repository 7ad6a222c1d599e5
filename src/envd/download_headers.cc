#include "envd/download_headers.h"

#include <fmt/format.h>

#include <array>
#include <ctime>
#include <limits>

#include "base/strings.h"

namespace warren::envd {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths.
std::optional<int> ParseQValue(std::string_view s) {
  if (s.empty() || (s[0] != '0' && s[0] != '1')) return std::nullopt;
  int whole = s[0] - '0';
  if (s.size() == 1) return whole * 1000;
  if (s[1] != '.' || s.size() > 5) return std::nullopt;
  int frac = 0;
  int scale = 100;
  for (char c : s.substr(2)) {
    if (!IsDigit(c)) return std::nullopt;
    frac += (c - '0') * scale;
    scale /= 10;
  }
  if (whole == 1 && frac != 0) return std::nullopt;
  return whole * 1000 + frac;
}

// Decimal digits to uint64, saturating at the maximum (a huge position is still a position).
std::optional<uint64_t> ParseSaturating(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    v = v > (kMax - d) / 10 ? kMax : v * 10 + d;
  }
  return v;
}

// One entity-tag at the front of `s` ([W/]"etagc*"), consumed; nullopt when malformed.
struct EntityTag {
  bool weak = false;
  std::string_view opaque;  // with its quotes
};
std::optional<EntityTag> TakeEntityTag(std::string_view& s) {
  EntityTag tag;
  if (s.size() >= 2 && s[0] == 'W' && s[1] == '/') {
    tag.weak = true;
    s.remove_prefix(2);
  }
  if (s.empty() || s[0] != '"') return std::nullopt;
  size_t end = 1;
  while (end < s.size() && s[end] != '"') {
    unsigned char c = static_cast<unsigned char>(s[end]);
    if (c < 0x21 || c == 0x7f) return std::nullopt;  // etagc excludes controls and spaces
    ++end;
  }
  if (end == s.size()) return std::nullopt;
  tag.opaque = s.substr(0, end + 1);
  s.remove_prefix(end + 1);
  return tag;
}

constexpr std::array<std::string_view, 7> kDays = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

std::optional<int> MonthIndex(std::string_view s) {
  for (size_t i = 0; i < kMonths.size(); ++i) {
    if (s == kMonths[i]) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::optional<int> FixedNumber(std::string_view s, size_t digits) {
  if (s.size() != digits) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// "hh:mm:ss" into tm.
bool ParseClock(std::string_view s, std::tm& tm) {
  if (s.size() != 8 || s[2] != ':' || s[5] != ':') return false;
  auto h = FixedNumber(s.substr(0, 2), 2);
  auto m = FixedNumber(s.substr(3, 2), 2);
  auto sec = FixedNumber(s.substr(6, 2), 2);
  if (!h || !m || !sec || *h > 23 || *m > 59 || *sec > 60) return false;
  tm.tm_hour = *h;
  tm.tm_min = *m;
  tm.tm_sec = *sec;
  return true;
}

std::optional<int64_t> ToUnix(std::tm& tm) {
  if (tm.tm_mday < 1 || tm.tm_mday > 31) return std::nullopt;
  const int mday = tm.tm_mday;
  const int mon = tm.tm_mon;
  time_t t = timegm(&tm);
  if (tm.tm_mday != mday || tm.tm_mon != mon) return std::nullopt;  // Feb 30 and the like
  return static_cast<int64_t>(t);
}

std::string AsciiFallbackName(std::string_view name, bool& needs_extended) {
  std::string out;
  needs_extended = false;
  for (unsigned char c : name) {
    if (c < 0x20 || c >= 0x7f) {
      needs_extended = true;
      out += '_';
    } else {
      if (c == '"' || c == '\\') out += '\\';
      out += static_cast<char>(c);
    }
  }
  return out;
}

// RFC 8187 attr-char: ALPHA / DIGIT / "!#$&+-.^_`|~"; everything else is percent-encoded.
std::string ExtValue(std::string_view name) {
  std::string out = "UTF-8''";
  constexpr std::string_view kAttrPunct = "!#$&+-.^_`|~";
  for (unsigned char c : name) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 kAttrPunct.find(static_cast<char>(c)) != std::string_view::npos;
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

AcceptedCodings ParseAcceptEncoding(std::optional<std::string_view> header) {
  AcceptedCodings out;
  if (!header) return out;
  std::optional<int> identity, gzip, star;
  for (std::string_view element : base::Split(*header, ',')) {
    auto params = base::Split(element, ';');
    std::string name = base::AsciiLower(base::TrimSpace(params[0]));
    if (name.empty()) continue;
    int q = 1000;
    bool valid = true;
    for (size_t i = 1; i < params.size() && valid; ++i) {
      std::string_view p = base::TrimSpace(params[i]);
      size_t eq = p.find('=');
      if (eq == std::string_view::npos) continue;  // a parameter we do not know
      if (!base::EqualsIgnoreCase(base::TrimSpace(p.substr(0, eq)), "q")) continue;
      auto parsed = ParseQValue(base::TrimSpace(p.substr(eq + 1)));
      if (parsed) {
        q = *parsed;
      } else {
        valid = false;  // a malformed weight makes the element meaningless: skip it
      }
    }
    if (!valid) continue;
    if (name == "identity") {
      if (!identity) identity = q;
    } else if (name == "gzip" || name == "x-gzip") {
      if (!gzip) gzip = q;
    } else if (name == "*") {
      if (!star) star = q;
    }
  }
  out.gzip = gzip ? *gzip : star.value_or(0);
  out.identity = identity ? *identity : (star && *star == 0 ? 0 : 1000);
  return out;
}

std::optional<ContentCoding> ChooseCoding(const AcceptedCodings& accepted) {
  if (accepted.gzip > 0 && accepted.gzip >= accepted.identity) return ContentCoding::kGzip;
  if (accepted.identity > 0) return ContentCoding::kIdentity;
  return std::nullopt;
}

RangeRequest ParseRange(std::string_view header, uint64_t size) {
  RangeRequest whole;
  std::string_view s = base::TrimSpace(header);
  constexpr std::string_view kUnit = "bytes=";
  if (s.size() < kUnit.size() || !base::EqualsIgnoreCase(s.substr(0, kUnit.size()), kUnit)) {
    return whole;
  }
  s.remove_prefix(kUnit.size());
  if (s.find(',') != std::string_view::npos) return whole;  // several ranges: the whole file
  s = base::TrimSpace(s);
  size_t dash = s.find('-');
  if (dash == std::string_view::npos) return whole;
  std::string_view first_text = base::TrimSpace(s.substr(0, dash));
  std::string_view last_text = base::TrimSpace(s.substr(dash + 1));
  RangeRequest out;
  if (first_text.empty()) {
    // Suffix range: the last n bytes.
    auto n = ParseSaturating(last_text);
    if (!n) return whole;
    if (*n == 0 || size == 0) {
      out.kind = RangeRequest::Kind::kUnsatisfiable;
      return out;
    }
    out.kind = RangeRequest::Kind::kPartial;
    out.first = *n >= size ? 0 : size - *n;
    out.last = size - 1;
    return out;
  }
  auto first = ParseSaturating(first_text);
  if (!first) return whole;
  uint64_t last = std::numeric_limits<uint64_t>::max();
  if (!last_text.empty()) {
    auto parsed = ParseSaturating(last_text);
    if (!parsed || *parsed < *first) return whole;  // invalid syntax: ignored (RFC 9110 §14.1.1)
    last = *parsed;
  }
  if (*first >= size) {
    out.kind = RangeRequest::Kind::kUnsatisfiable;
    return out;
  }
  out.kind = RangeRequest::Kind::kPartial;
  out.first = *first;
  out.last = std::min(last, size - 1);
  return out;
}

std::string WeakETag(const FileVersion& file) {
  const uint64_t mtime_ns = static_cast<uint64_t>(file.mtime_sec) * 1'000'000'000u +
                            static_cast<uint64_t>(file.mtime_nsec);
  return fmt::format("W/\"{:x}-{:x}-{:x}\"", file.size, mtime_ns, file.inode);
}

std::string FormatHttpDate(int64_t unix_seconds) {
  time_t t = static_cast<time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT", kDays[tm.tm_wday], tm.tm_mday,
                     kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

std::optional<int64_t> ParseHttpDate(std::string_view s) {
  s = base::TrimSpace(s);
  std::tm tm{};
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
  if (s.size() == 29 && s[3] == ',') {
    if (s.substr(4, 1) != " " || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' || s[25] != ' ' ||
        s.substr(26) != "GMT") {
      return std::nullopt;
    }
    auto day = FixedNumber(s.substr(5, 2), 2);
    auto mon = MonthIndex(s.substr(8, 3));
    auto year = FixedNumber(s.substr(12, 4), 4);
    if (!day || !mon || !year || !ParseClock(s.substr(17, 8), tm)) return std::nullopt;
    tm.tm_mday = *day;
    tm.tm_mon = *mon;
    tm.tm_year = *year - 1900;
    return ToUnix(tm);
  }
  // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
  if (size_t comma = s.find(','); comma != std::string_view::npos) {
    std::string_view rest = s.substr(comma + 1);
    if (rest.size() != 23 || rest[0] != ' ' || rest[3] != '-' || rest[7] != '-' ||
        rest[10] != ' ' || rest.substr(19) != " GMT") {
      return std::nullopt;
    }
    auto day = FixedNumber(rest.substr(1, 2), 2);
    auto mon = MonthIndex(rest.substr(4, 3));
    auto yy = FixedNumber(rest.substr(8, 2), 2);
    if (!day || !mon || !yy || !ParseClock(rest.substr(11, 8), tm)) return std::nullopt;
    tm.tm_mday = *day;
    tm.tm_mon = *mon;
    // Two-digit years: RFC 9110 says read 50+ years ahead as the past century.
    tm.tm_year = *yy < 70 ? *yy + 100 : *yy;
    return ToUnix(tm);
  }
  // asctime: "Sun Nov  6 08:49:37 1994"
  if (s.size() == 24 && s[3] == ' ' && s[7] == ' ' && s[10] == ' ' && s[19] == ' ') {
    auto mon = MonthIndex(s.substr(4, 3));
    std::string_view day_text = s.substr(8, 2);
    if (day_text[0] == ' ') day_text.remove_prefix(1);
    auto day = FixedNumber(day_text, day_text.size());
    auto year = FixedNumber(s.substr(20, 4), 4);
    if (!day || !mon || !year || !ParseClock(s.substr(11, 8), tm)) return std::nullopt;
    tm.tm_mday = *day;
    tm.tm_mon = *mon;
    tm.tm_year = *year - 1900;
    return ToUnix(tm);
  }
  return std::nullopt;
}

bool IfNoneMatchMatches(std::string_view header, std::string_view etag) {
  std::string_view s = base::TrimSpace(header);
  if (s == "*") return true;
  std::string_view ours = etag;
  if (ours.substr(0, 2) == "W/") ours.remove_prefix(2);
  while (!s.empty()) {
    auto tag = TakeEntityTag(s);
    if (!tag) return false;
    if (tag->opaque == ours) return true;  // weak comparison: opaque tags equal
    s = base::TrimSpace(s);
    if (s.empty()) break;
    if (s[0] != ',') return false;
    s = base::TrimSpace(s.substr(1));
  }
  return false;
}

bool IfRangeHolds(std::string_view header, std::string_view etag, int64_t mtime_sec) {
  std::string_view s = base::TrimSpace(header);
  if (!s.empty() && (s[0] == '"' || s.substr(0, 2) == "W/")) {
    auto tag = TakeEntityTag(s);
    if (!tag || !base::TrimSpace(s).empty() || tag->weak) return false;
    // Strong comparison: both must be strong. Ours is weak, so this never holds.
    return etag.substr(0, 2) != "W/" && tag->opaque == etag;
  }
  auto date = ParseHttpDate(s);
  return date && *date == mtime_sec;
}

DownloadPlan PlanDownload(const DownloadConditions& request, const FileVersion& file) {
  DownloadPlan plan;
  plan.etag = WeakETag(file);
  plan.last_modified = FormatHttpDate(file.mtime_sec);
  if (request.if_none_match) {
    if (IfNoneMatchMatches(*request.if_none_match, plan.etag)) {
      plan.status = 304;
      return plan;
    }
  } else if (request.if_modified_since) {
    auto since = ParseHttpDate(*request.if_modified_since);
    if (since && file.mtime_sec <= *since) {
      plan.status = 304;
      return plan;
    }
  }
  const AcceptedCodings accepted = ParseAcceptEncoding(request.accept_encoding);
  auto coding = ChooseCoding(accepted);
  if (!coding) {
    plan.status = 406;
    return plan;
  }
  plan.coding = *coding;
  plan.gzip_if_it_pays = plan.coding == ContentCoding::kGzip && accepted.identity > 0;
  plan.length = file.size;
  const bool range_applies =
      request.range && accepted.identity > 0 &&
      (!request.if_range || IfRangeHolds(*request.if_range, plan.etag, file.mtime_sec));
  if (!range_applies) return plan;
  RangeRequest range = ParseRange(*request.range, file.size);
  switch (range.kind) {
    case RangeRequest::Kind::kWhole:
      return plan;
    case RangeRequest::Kind::kUnsatisfiable:
      plan.status = 416;
      plan.gzip_if_it_pays = false;
      plan.coding = ContentCoding::kIdentity;
      plan.length = 0;
      plan.content_range = fmt::format("bytes */{}", file.size);
      return plan;
    case RangeRequest::Kind::kPartial:
      plan.status = 206;
      plan.gzip_if_it_pays = false;
      plan.coding = ContentCoding::kIdentity;
      plan.offset = range.first;
      plan.length = range.last - range.first + 1;
      plan.content_range = fmt::format("bytes {}-{}/{}", range.first, range.last, file.size);
      return plan;
  }
  return plan;
}

std::string ContentDisposition(std::string_view name) {
  bool needs_extended = false;
  std::string fallback = AsciiFallbackName(name, needs_extended);
  std::string out = fmt::format("inline; filename=\"{}\"", fallback);
  if (needs_extended) out += "; filename*=" + ExtValue(name);
  return out;
}

}  // namespace warren::envd
