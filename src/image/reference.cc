#include "image/reference.h"

#include <fmt/format.h>

#include "base/strings.h"
#include "image/safe_fs.h"

namespace warren::image {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

bool ValidPathComponent(std::string_view part) {
  if (part.empty() || !IsLowerAlnum(part.front()) || !IsLowerAlnum(part.back())) return false;
  for (char c : part) {
    if (!IsLowerAlnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// A registry host: "localhost", "registry.example:5000", "127.0.0.1:5000".
bool ValidHost(std::string_view host) {
  if (host.empty()) return false;
  size_t colon = host.find(':');
  std::string_view name = host.substr(0, colon);
  for (std::string_view label : base::Split(name, '.')) {
    if (label.empty() || !IsAlnum(label.front()) || !IsAlnum(label.back())) return false;
    for (char c : label) {
      if (!IsAlnum(c) && c != '-') return false;
    }
  }
  if (colon != std::string_view::npos) {
    std::string_view port = host.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port) {
      if (c < '0' || c > '9') return false;
    }
  }
  return true;
}

bool ValidTag(std::string_view tag) {
  if (tag.empty() || tag.size() > 128) return false;
  if (!IsAlnum(tag.front()) && tag.front() != '_') return false;
  for (char c : tag) {
    if (!IsAlnum(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

}  // namespace

Result<ImageRef> ParseImageRef(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(
        fmt::format("image name '{}' is invalid: {}", PrintablePath(text), why));
  };
  if (text.empty()) return bad("empty");
  if (text.size() > 255) return bad("longer than 255 characters");
  if (text.find('@') != std::string_view::npos) return bad("digest references are not names");
  ImageRef ref;
  size_t slash = text.rfind('/');
  size_t colon = text.rfind(':');
  std::string_view repository = text;
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    repository = text.substr(0, colon);
    ref.tag = std::string(text.substr(colon + 1));
    if (!ValidTag(ref.tag)) return bad("the tag must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
  } else {
    ref.tag = "latest";
  }
  std::vector<std::string_view> parts = base::Split(repository, '/');
  for (size_t i = 0; i < parts.size(); ++i) {
    bool host = i == 0 && parts.size() > 1 &&
                (parts[0].find_first_of(".:") != std::string_view::npos || parts[0] == "localhost");
    if (host ? !ValidHost(parts[i]) : !ValidPathComponent(parts[i])) {
      return bad(
          "repository components are lowercase letters, digits and '.', '_', '-' between "
          "alphanumerics");
    }
  }
  ref.repository = std::string(repository);
  return ref;
}

}  // namespace warren::image
