#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::envd {

// The head of one part of a multipart/form-data body.
struct MultipartPart {
  std::string name;                     // Content-Disposition name
  std::optional<std::string> filename;  // Content-Disposition filename, kept verbatim
  std::string content_type;
};

// The boundary parameter of a multipart/form-data Content-Type; InvalidArgument otherwise.
Result<std::string> MultipartBoundary(std::string_view content_type);

// A streaming multipart/form-data parser (RFC 7578): bytes go in as they arrive, part heads and
// body bytes come out through callbacks, so a 100 MiB upload never sits in memory. Part headers
// are limited to 16 KiB. A callback's error stops the parse and is returned. Not thread-safe.
class MultipartParser {
 public:
  struct Callbacks {
    std::function<Status(const MultipartPart&)> on_part;
    std::function<Status(std::string_view)> on_data;
    std::function<Status()> on_part_end;
  };

  MultipartParser(std::string boundary, Callbacks callbacks);

  Status Feed(std::string_view bytes);
  // The body is complete: InvalidArgument unless the closing boundary was seen.
  Status Finish();

 private:
  enum class State { kPreamble, kAfterBoundary, kHeaders, kBody, kDone };
  Status Step(bool* progressed);
  Status ParseHeaders(std::string_view block);

  const std::string dash_boundary_;  // "--" + boundary
  const std::string delimiter_;      // "\r\n--" + boundary
  Callbacks callbacks_;
  State state_ = State::kPreamble;
  std::string buffer_;
};

}  // namespace warren::envd
