#pragma once

// What GET /files answers, decided from the request's headers and the file's identity alone:
// content coding (Accept-Encoding with q-values), byte ranges (Range, If-Range), conditional
// requests (If-None-Match, If-Modified-Since) and the validators and Content-Disposition the
// response carries. Pure functions over strings, no I/O and no net/ types, so they are unit-tested
// and fuzzed directly. Every input is untrusted: malformed headers are ignored as RFC 9110 says
// (or make the request unacceptable where it says so); nothing here fails or throws.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warren::envd {

enum class ContentCoding { kIdentity, kGzip };

// The q-values (in thousandths, 0..1000) an Accept-Encoding header gives the two codings we can
// produce. Without the header identity is 1000 and gzip 0. Elements with a malformed q-value are
// skipped; "x-gzip" is gzip; "*" stands for every coding not listed; identity stays acceptable
// unless "identity;q=0" or "*;q=0" (without an identity entry) excludes it (RFC 9110 §12.5.3).
struct AcceptedCodings {
  int identity = 1000;
  int gzip = 0;
};
AcceptedCodings ParseAcceptEncoding(std::optional<std::string_view> header);

// The coding to answer with: gzip when the client gives it a q above 0 and at least identity's
// (a client that names gzip wants it), else identity when acceptable, else nullopt (→ 406).
std::optional<ContentCoding> ChooseCoding(const AcceptedCodings& accepted);

// A Range header against a file of `size` bytes (RFC 9110 §14.2). Only one `bytes=` range is
// served: `a-b`, `a-` and `-n`; a header of another unit, bad syntax (`a` > `b`, signs, junk) or
// several ranges is ignored (kWhole, the whole file with 200). A syntactically valid range that
// starts at or past the end, or a suffix `-0`, is kUnsatisfiable (416). Numbers too big for 64
// bits saturate, so `bytes=0-99999999999999999999999` is the whole rest of the file.
struct RangeRequest {
  enum class Kind { kWhole, kPartial, kUnsatisfiable };
  Kind kind = Kind::kWhole;
  uint64_t first = 0;  // kPartial: first byte served
  uint64_t last = 0;   // kPartial: last byte served (inclusive, < size)
};
RangeRequest ParseRange(std::string_view header, uint64_t size);

// What identifies one version of a file.
struct FileVersion {
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  int64_t mtime_nsec = 0;
  uint64_t inode = 0;
};

// W/"<size>-<mtime ns>-<inode>" in hex. Weak: the same bytes on another inode compare unequal,
// and a write within one mtime tick may not change it.
std::string WeakETag(const FileVersion& file);

// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT").
std::string FormatHttpDate(int64_t unix_seconds);
// The three HTTP-date forms of RFC 9110 §5.6.7 (IMF-fixdate, RFC 850, asctime); nullopt otherwise.
std::optional<int64_t> ParseHttpDate(std::string_view s);

// If-None-Match: "*" or a list of entity tags, compared weakly with `etag`. False when malformed.
bool IfNoneMatchMatches(std::string_view header, std::string_view etag);

// If-Range (RFC 9110 §13.1.5): the Range applies only if the validator still holds. An entity
// tag needs a strong match, which our weak ETag never gives; a date must equal Last-Modified.
bool IfRangeHolds(std::string_view header, std::string_view etag, int64_t mtime_sec);

// The request headers GET /files looks at, as received (nullopt when absent).
struct DownloadConditions {
  std::optional<std::string_view> accept_encoding;
  std::optional<std::string_view> range;
  std::optional<std::string_view> if_none_match;
  std::optional<std::string_view> if_modified_since;
  std::optional<std::string_view> if_range;
};

// The answer to one GET /files of an existing regular file.
struct DownloadPlan {
  int status = 200;  // 200, 206, 304, 406 or 416
  ContentCoding coding = ContentCoding::kIdentity;
  // gzip chosen while identity is acceptable too: the server serves gzip only if the file's
  // first bytes compress (GzipPays, gzip_probe.h), else identity. False when identity is refused
  // (gzip always) and for every status but 200.
  bool gzip_if_it_pays = false;
  uint64_t offset = 0;  // 200/206: first byte to send
  uint64_t length = 0;  // 200/206: bytes to send (before coding)
  std::string etag;
  std::string last_modified;
  std::string content_range;  // 206: "bytes a-b/size"; 416: "bytes */size"
};

// Evaluation order of RFC 9110 §13.2.2: If-None-Match (else If-Modified-Since) → 304; then the
// coding (406 when none is acceptable; gzip_if_it_pays when identity would do too); then Range,
// honoured only with identity acceptable and If-Range holding, and always answered in identity.
DownloadPlan PlanDownload(const DownloadConditions& request, const FileVersion& file);

// `inline; filename="<name>"` with '"' and '\' escaped; a name with control or non-ASCII bytes
// gets an ASCII fallback (those bytes as '_') plus filename*=UTF-8''<percent-encoded> (RFC 6266).
std::string ContentDisposition(std::string_view name);

}  // namespace warren::envd
