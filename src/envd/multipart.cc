#include "envd/multipart.h"

#include <fmt/format.h>

#include "base/strings.h"

namespace warren::envd {
namespace {

constexpr size_t kMaxHeaderBytes = 16 * 1024;
constexpr size_t kMaxBoundary = 200;

// Reads `name=value` parameters after the first ';' of a header value. Values may be tokens or
// quoted strings with backslash escapes.
std::optional<std::string> HeaderParam(std::string_view value, std::string_view want) {
  size_t i = value.find(';');
  while (i != std::string_view::npos && i < value.size()) {
    ++i;
    while (i < value.size() && (value[i] == ' ' || value[i] == '\t')) ++i;
    size_t eq = value.find('=', i);
    if (eq == std::string_view::npos) return std::nullopt;
    std::string key = base::AsciiLower(base::TrimSpace(value.substr(i, eq - i)));
    size_t j = eq + 1;
    while (j < value.size() && (value[j] == ' ' || value[j] == '\t')) ++j;
    std::string out;
    if (j < value.size() && value[j] == '"') {
      ++j;
      while (j < value.size() && value[j] != '"') {
        if (value[j] == '\\' && j + 1 < value.size()) ++j;
        out += value[j++];
      }
      if (j < value.size()) ++j;  // closing quote
      i = value.find(';', j);
    } else {
      size_t end = value.find(';', j);
      out = std::string(base::TrimSpace(
          value.substr(j, end == std::string_view::npos ? std::string_view::npos : end - j)));
      i = end;
    }
    if (key == want) return out;
  }
  return std::nullopt;
}

}  // namespace

Result<std::string> MultipartBoundary(std::string_view content_type) {
  std::string_view media = content_type.substr(0, content_type.find(';'));
  if (!base::EqualsIgnoreCase(base::TrimSpace(media), "multipart/form-data")) {
    return InvalidArgumentError("content type is not multipart/form-data");
  }
  auto boundary = HeaderParam(content_type, "boundary");
  if (!boundary || boundary->empty() || boundary->size() > kMaxBoundary) {
    return InvalidArgumentError("multipart/form-data without a valid boundary");
  }
  return *boundary;
}

MultipartParser::MultipartParser(std::string boundary, Callbacks callbacks)
    : dash_boundary_("--" + boundary),
      delimiter_("\r\n--" + boundary),
      callbacks_(std::move(callbacks)) {}

Status MultipartParser::Feed(std::string_view bytes) {
  if (state_ == State::kDone) return Status::Ok();  // epilogue is ignored
  buffer_.append(bytes);
  bool progressed = true;
  while (progressed && state_ != State::kDone) {
    progressed = false;
    RETURN_IF_ERROR(Step(&progressed));
  }
  if (state_ == State::kDone) buffer_.clear();
  return Status::Ok();
}

Status MultipartParser::Step(bool* progressed) {
  switch (state_) {
    case State::kPreamble: {
      // The first boundary may open the body or follow a preamble line.
      size_t at = buffer_.rfind(dash_boundary_, 0) == 0 ? 0 : buffer_.find(delimiter_);
      if (at == std::string::npos) {
        if (buffer_.size() > kMaxHeaderBytes) {
          return InvalidArgumentError("multipart body does not start with its boundary");
        }
        return Status::Ok();
      }
      buffer_.erase(0, at == 0 ? dash_boundary_.size() : at + delimiter_.size());
      state_ = State::kAfterBoundary;
      *progressed = true;
      return Status::Ok();
    }
    case State::kAfterBoundary: {
      // "--" closes the body; otherwise optional whitespace, then CRLF and a part's headers.
      if (buffer_.size() < 2) return Status::Ok();
      if (buffer_.compare(0, 2, "--") == 0) {
        state_ = State::kDone;
        *progressed = true;
        return Status::Ok();
      }
      size_t crlf = buffer_.find("\r\n");
      if (crlf == std::string::npos) {
        if (buffer_.size() > kMaxHeaderBytes) return InvalidArgumentError("malformed boundary");
        return Status::Ok();
      }
      if (!base::TrimSpace(std::string_view(buffer_).substr(0, crlf)).empty()) {
        return InvalidArgumentError("malformed multipart boundary line");
      }
      buffer_.erase(0, crlf + 2);
      state_ = State::kHeaders;
      *progressed = true;
      return Status::Ok();
    }
    case State::kHeaders: {
      size_t end;
      size_t skip;
      if (buffer_.rfind("\r\n", 0) == 0) {  // a part without headers
        end = 0;
        skip = 2;
      } else {
        end = buffer_.find("\r\n\r\n");
        skip = 4;
      }
      if (end == std::string::npos) {
        if (buffer_.size() > kMaxHeaderBytes) {
          return InvalidArgumentError("multipart part headers exceed 16 KiB");
        }
        return Status::Ok();
      }
      if (end > kMaxHeaderBytes)
        return InvalidArgumentError("multipart part headers exceed 16 KiB");
      RETURN_IF_ERROR(ParseHeaders(std::string_view(buffer_).substr(0, end)));
      buffer_.erase(0, end + skip);
      state_ = State::kBody;
      *progressed = true;
      return Status::Ok();
    }
    case State::kBody: {
      size_t at = buffer_.find(delimiter_);
      if (at == std::string::npos) {
        // Everything but a tail that could be the start of the delimiter is body.
        if (buffer_.size() >= delimiter_.size()) {
          size_t safe = buffer_.size() - (delimiter_.size() - 1);
          RETURN_IF_ERROR(callbacks_.on_data(std::string_view(buffer_).substr(0, safe)));
          buffer_.erase(0, safe);
        }
        return Status::Ok();
      }
      if (at > 0) RETURN_IF_ERROR(callbacks_.on_data(std::string_view(buffer_).substr(0, at)));
      RETURN_IF_ERROR(callbacks_.on_part_end());
      buffer_.erase(0, at + delimiter_.size());
      state_ = State::kAfterBoundary;
      *progressed = true;
      return Status::Ok();
    }
    case State::kDone:
      return Status::Ok();
  }
  return Status::Ok();
}

Status MultipartParser::ParseHeaders(std::string_view block) {
  MultipartPart part;
  bool has_disposition = false;
  for (auto line : base::Split(block, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return InvalidArgumentError("malformed multipart part header line");
    }
    auto name = base::TrimSpace(line.substr(0, colon));
    auto value = base::TrimSpace(line.substr(colon + 1));
    if (base::EqualsIgnoreCase(name, "content-disposition")) {
      std::string_view kind = base::TrimSpace(value.substr(0, value.find(';')));
      if (!base::EqualsIgnoreCase(kind, "form-data")) {
        return InvalidArgumentError("multipart part is not form-data");
      }
      has_disposition = true;
      part.name = HeaderParam(value, "name").value_or("");
      part.filename = HeaderParam(value, "filename");
    } else if (base::EqualsIgnoreCase(name, "content-type")) {
      part.content_type = std::string(value);
    }
  }
  if (!has_disposition) {
    return InvalidArgumentError("multipart part without a Content-Disposition header");
  }
  return callbacks_.on_part(part);
}

Status MultipartParser::Finish() {
  if (state_ != State::kDone) {
    return InvalidArgumentError("multipart body ended before its closing boundary");
  }
  return Status::Ok();
}

}  // namespace warren::envd
