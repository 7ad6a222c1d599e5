// libFuzzer target for everything envd parses from the network: Connect envelopes (one-shot and
// incremental), the proto3 JSON bodies of every RPC and of /init, multipart/form-data bodies,
// gzip bodies, Basic auth headers, X-Metadata-* headers, query-string decoding and path
// resolution, and the GET /files download headers (Accept-Encoding, Range, If-None-Match,
// If-Modified-Since, If-Range, HTTP dates, Content-Disposition). The first input byte picks the
// parser. None may crash, hang or leak.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/check.h"
#include "base/strings.h"
#include "envd/download_headers.h"
#include "envd/envd_state.h"
#include "envd/envelope.h"
#include "envd/file_transfer.h"
#include "envd/filesystem_messages.h"
#include "envd/multipart.h"
#include "envd/paths.h"
#include "envd/process_messages.h"

using namespace warren;
using namespace warren::envd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (selector % 13) {
    case 0: {
      auto payload = DecodeSingleEnvelope(in, 1 << 20);
      if (payload.ok()) ParseStartRequest(*payload).status().IgnoreError();
      break;
    }
    case 1: {
      EnvelopeReader reader(1 << 16);
      for (size_t i = 0; i < in.size(); i += 7) {
        reader.Feed(in.substr(i, 7));
        for (int n = 0; n < 64; ++n) {
          auto next = reader.Next();
          if (!next.ok() || !*next) break;
        }
      }
      break;
    }
    case 2:
      ParseStartRequest(in).status().IgnoreError();
      ParseConnectRequest(in).status().IgnoreError();
      ParseSendInputRequest(in).status().IgnoreError();
      break;
    case 3:
      ParseSendSignalRequest(in).status().IgnoreError();
      ParseCloseStdinRequest(in).status().IgnoreError();
      ParseUpdateRequest(in).status().IgnoreError();
      ParseListRequest(in).IgnoreError();
      break;
    case 4:
      ParsePathRequest(in).status().IgnoreError();
      ParseMoveRequest(in).status().IgnoreError();
      ParseListDirRequest(in).status().IgnoreError();
      ParseWatchRequest(in).status().IgnoreError();
      ParseWatcherIdRequest(in).status().IgnoreError();
      ParseInitRequest(in).status().IgnoreError();
      break;
    case 5:
    case 6: {
      // Boundary from the first line, the body after it, fed in uneven pieces.
      size_t nl = in.find('\n');
      std::string boundary(in.substr(0, nl == std::string_view::npos ? 0 : nl));
      if (boundary.empty()) boundary = "B";
      std::string_view body = nl == std::string_view::npos ? in : in.substr(nl + 1);
      MultipartParser parser(
          boundary, {[](const MultipartPart&) { return Status::Ok(); },
                     [](std::string_view) { return Status::Ok(); }, [] { return Status::Ok(); }});
      const size_t step = 1 + selector % 13;
      for (size_t i = 0; i < body.size(); i += step) {
        if (!parser.Feed(body.substr(i, step)).ok()) break;
      }
      parser.Finish().IgnoreError();
      MultipartBoundary(std::string(in)).status().IgnoreError();
      break;
    }
    case 7: {
      GzipDecoder gzip;
      std::string out;
      for (size_t i = 0; i < in.size() && out.size() < (64u << 20); i += 512) {
        if (!gzip.Decode(in.substr(i, 512), out).ok()) break;
        if (out.size() > (1u << 20)) out.clear();
      }
      gzip.Finish().IgnoreError();
      break;
    }
    case 8:
      UserFromBasicAuth(std::string(in), "user").status().IgnoreError();
      break;
    case 9: {
      std::vector<std::pair<std::string, std::string>> headers;
      for (auto line : base::Split(in, '\n')) {
        auto colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        headers.emplace_back(std::string(line.substr(0, colon)),
                             std::string(line.substr(colon + 1)));
      }
      MetadataFromHeaders(headers).status().IgnoreError();
      break;
    }
    case 10:
      for (auto pair : base::Split(in, '&')) {
        auto eq = pair.find('=');
        base::PercentDecode(pair.substr(0, eq));
        if (eq != std::string_view::npos) base::PercentDecode(pair.substr(eq + 1));
      }
      break;
    case 11: {
      os::UserInfo user;
      user.name = "user";
      user.home = "/home/user";
      ResolvePath(in, user, std::string("/work")).status().IgnoreError();
      CleanPath(in);
      break;
    }
    case 12: {
      // Lines: Accept-Encoding, Range, If-None-Match, If-Modified-Since, If-Range; the file
      // size comes from the selector so that small and empty files are both reached.
      auto lines = base::Split(in, '\n');
      auto line = [&](size_t i) -> std::optional<std::string_view> {
        if (i >= lines.size()) return std::nullopt;
        return lines[i];
      };
      const FileVersion file{static_cast<uint64_t>(selector / 13) * 37, 1000, 5, 7};
      DownloadConditions c{line(0), line(1), line(2), line(3), line(4)};
      const DownloadPlan plan = PlanDownload(c, file);
      if (plan.status == 206) {
        CHECK(plan.length > 0 && plan.offset + plan.length <= file.size);
      }
      if (plan.status == 200) CHECK(plan.offset == 0 && plan.length == file.size);
      if (plan.gzip_if_it_pays) CHECK(plan.status == 200 && plan.coding == ContentCoding::kGzip);
      RangeRequest range = ParseRange(in, file.size);
      if (range.kind == RangeRequest::Kind::kPartial) {
        CHECK(range.first <= range.last && range.last < file.size);
      }
      ParseHttpDate(in);
      const std::string disposition = ContentDisposition(in);
      for (unsigned char ch : disposition) CHECK(ch >= 0x20 && ch < 0x7f);
      break;
    }
  }
  return 0;
}
