#include "base/time_zone.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "base/small_file.h"

namespace warren::base {

struct TimeZone::Data {
  std::string name;
  std::vector<int64_t> transitions;  // ascending Unix seconds
  std::vector<uint8_t> type_of;      // the type in force from transitions[i]
  struct Type {
    int32_t utc_offset;
    bool is_dst;
  };
  std::vector<Type> types;  // never empty
  std::optional<PosixTz> footer;
};

namespace {

// Real zone files are a few KiB; this bounds what a damaged or hostile file can make us read.
constexpr size_t kMaxTzifBytes = 256 * 1024;

// Reads big-endian integers from TZif data, failing once on running off the end.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool ok() const { return ok_; }
  size_t offset() const { return pos_; }
  std::string_view Take(size_t n) {
    if (!ok_ || data_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  uint64_t Unsigned(size_t bytes) {
    std::string_view b = Take(bytes);
    uint64_t v = 0;
    for (char c : b) v = (v << 8) | static_cast<uint8_t>(c);
    return v;
  }
  int64_t Signed(size_t bytes) {
    uint64_t v = Unsigned(bytes);
    if (bytes == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
    return static_cast<int64_t>(v);
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

struct Header {
  char version = 0;
  uint64_t isutcnt = 0, isstdcnt = 0, leapcnt = 0, timecnt = 0, typecnt = 0, charcnt = 0;
};

std::optional<Header> ReadHeader(Reader& r) {
  if (r.Take(4) != "TZif") return std::nullopt;
  Header h;
  std::string_view v = r.Take(1);
  h.version = v.empty() ? 0 : v[0];
  r.Take(15);
  h.isutcnt = r.Unsigned(4);
  h.isstdcnt = r.Unsigned(4);
  h.leapcnt = r.Unsigned(4);
  h.timecnt = r.Unsigned(4);
  h.typecnt = r.Unsigned(4);
  h.charcnt = r.Unsigned(4);
  if (!r.ok()) return std::nullopt;
  return h;
}

// Reads one data block (v1 with 4-byte times, v2+ with 8-byte times) into `out`.
Status ReadBlock(std::string_view name, Reader& r, const Header& h, size_t time_size,
                 TimeZone::Data& out) {
  auto bad = [&](std::string_view what) {
    return InvalidArgumentError(fmt::format("time zone \"{}\": bad TZif data: {}", name, what));
  };
  if (h.typecnt == 0 || h.typecnt > 256 || h.timecnt > 100000 || h.charcnt > 100000 ||
      h.leapcnt > 100000) {
    return bad("counts out of range");
  }
  out.transitions.clear();
  out.type_of.clear();
  out.types.clear();
  for (uint64_t i = 0; i < h.timecnt; ++i) {
    int64_t t = r.Signed(time_size);
    if (!out.transitions.empty() && t <= out.transitions.back()) {
      return bad("transitions out of order");
    }
    out.transitions.push_back(t);
  }
  for (uint64_t i = 0; i < h.timecnt; ++i) {
    uint64_t type = r.Unsigned(1);
    if (type >= h.typecnt) return bad("transition type out of range");
    out.type_of.push_back(static_cast<uint8_t>(type));
  }
  for (uint64_t i = 0; i < h.typecnt; ++i) {
    int64_t offset = r.Signed(4);
    uint64_t is_dst = r.Unsigned(1);
    r.Unsigned(1);  // abbreviation index: names are not needed for offsets
    if (offset <= -25 * 3600 || offset >= 26 * 3600) return bad("offset out of range");
    out.types.push_back({static_cast<int32_t>(offset), is_dst != 0});
  }
  r.Take(h.charcnt + h.leapcnt * (time_size + 4) + h.isstdcnt + h.isutcnt);
  if (!r.ok()) return bad("truncated");
  return Status::Ok();
}

bool IsSafeZoneName(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.find("..") != std::string_view::npos) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '/' ||
           c == '_' || c == '-' || c == '+' || c == '.';
  });
}

}  // namespace

TimeZone TimeZone::Utc() {
  static const std::shared_ptr<const Data> kUtc = [] {
    auto d = std::make_shared<Data>();
    d->name = "UTC";
    d->types.push_back({0, false});
    return std::shared_ptr<const Data>(std::move(d));
  }();
  return TimeZone(kUtc);
}

Result<TimeZone> TimeZone::Load(std::string_view name, std::string_view zoneinfo_dir) {
  if (name.empty() || name == "UTC") return Utc();
  if (name == "Local") {
    return InvalidArgumentError(
        "time zone \"Local\" is not allowed: name an IANA zone such as \"Europe/Berlin\"");
  }
  if (!IsSafeZoneName(name)) {
    return InvalidArgumentError(fmt::format("invalid time zone name \"{}\"", name));
  }
  std::string path = fmt::format("{}/{}", zoneinfo_dir, name);
  auto bytes = ReadSmallFile(path, kMaxTzifBytes);
  if (!bytes.ok()) {
    return InvalidArgumentError(fmt::format("unknown time zone \"{}\" (not found in {}: {})", name,
                                            zoneinfo_dir, bytes.status().message()));
  }
  return FromTzif(name, *bytes);
}

Result<TimeZone> TimeZone::FromTzif(std::string_view name, std::string_view data) {
  auto data_out = std::make_shared<Data>();
  data_out->name = std::string(name);
  Reader r(data);
  auto h = ReadHeader(r);
  if (!h) {
    return InvalidArgumentError(fmt::format("time zone \"{}\": not a TZif file", name));
  }
  RETURN_IF_ERROR(ReadBlock(name, r, *h, 4, *data_out));
  if (h->version >= '2') {
    // The v2+ header and block repeat the data with 64-bit times, then the footer follows.
    auto h2 = ReadHeader(r);
    if (!h2) {
      return InvalidArgumentError(fmt::format("time zone \"{}\": bad TZif v2 header", name));
    }
    RETURN_IF_ERROR(ReadBlock(name, r, *h2, 8, *data_out));
    std::string_view rest = data.substr(r.offset());
    if (rest.size() < 2 || rest.front() != '\n') {
      return InvalidArgumentError(fmt::format("time zone \"{}\": TZif footer missing", name));
    }
    rest.remove_prefix(1);
    size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) {
      return InvalidArgumentError(fmt::format("time zone \"{}\": TZif footer unterminated", name));
    }
    std::string_view rule = rest.substr(0, nl);
    if (!rule.empty()) {
      auto parsed = PosixTz::Parse(rule);
      if (!parsed.ok()) return parsed.status().WithPrefix(fmt::format("time zone \"{}\"", name));
      data_out->footer = *parsed;
    }
  }
  return TimeZone(std::move(data_out));
}

const std::string& TimeZone::name() const { return data_->name; }

ZonePeriod TimeZone::Lookup(int64_t t) const {
  const Data& d = *data_;
  const auto& tx = d.transitions;
  if (tx.empty() && d.footer) return d.footer->Lookup(t);
  if (tx.empty() || t < tx.front()) {
    // RFC 8536: time type 0 holds before the first transition.
    return {d.types[0].utc_offset, d.types[0].is_dst, ZonePeriod::kMin,
            tx.empty() ? ZonePeriod::kMax : tx.front()};
  }
  size_t i = static_cast<size_t>(std::upper_bound(tx.begin(), tx.end(), t) - tx.begin()) - 1;
  const Data::Type& type = d.types[d.type_of[i]];
  if (i + 1 < tx.size()) return {type.utc_offset, type.is_dst, tx[i], tx[i + 1]};
  if (!d.footer) return {type.utc_offset, type.is_dst, tx[i], ZonePeriod::kMax};
  ZonePeriod p = d.footer->Lookup(t);
  p.start = std::max(p.start, tx[i]);
  return p;
}

CivilTime TimeZone::ToCivil(int64_t unix_seconds) const {
  return CivilFromSeconds(unix_seconds + Lookup(unix_seconds).utc_offset);
}

int64_t TimeZone::FromCivil(const CivilTime& c) const {
  int64_t local = SecondsFromCivil(c);
  ZonePeriod p = Lookup(local);
  int64_t utc = local - p.utc_offset;
  if (utc < p.start || utc >= p.end) return local - Lookup(utc).utc_offset;
  return utc;
}

}  // namespace warren::base
