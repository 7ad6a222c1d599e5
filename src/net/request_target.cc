#include "net/request_target.h"

#include "base/strings.h"

namespace warren::net {

namespace {

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && base::EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

}  // namespace

Result<RequestTarget> ParseRequestTarget(std::string_view target) {
  if (target.empty()) return InvalidArgumentError("empty request-target");
  if (target.front() != '/') {
    // Absolute-form: servers must accept it (RFC 9112 §3.2.2); only the path and query matter.
    std::string_view rest;
    if (StartsWithIgnoreCase(target, "http://")) {
      rest = target.substr(7);
    } else if (StartsWithIgnoreCase(target, "https://")) {
      rest = target.substr(8);
    } else {
      return InvalidArgumentError("request-target must be a path or an http URL");
    }
    size_t slash = rest.find_first_of("/?");
    if (slash == 0) return InvalidArgumentError("request-target URL has no host");
    if (slash == std::string_view::npos) {
      target = "/";
    } else if (rest[slash] == '?') {
      // "http://host?q" means path "/" with a query.
      RequestTarget out;
      out.raw_path = "/";
      out.path = "/";
      out.raw_query = std::string(rest.substr(slash + 1));
      if (out.raw_query.find('#') != std::string::npos) {
        return InvalidArgumentError("request-target carries a fragment");
      }
      return out;
    } else {
      target = rest.substr(slash);
    }
  }
  if (target.find('#') != std::string_view::npos) {
    return InvalidArgumentError("request-target carries a fragment");
  }
  RequestTarget out;
  size_t q = target.find('?');
  std::string_view raw_path = target.substr(0, q);
  if (q != std::string_view::npos) out.raw_query = std::string(target.substr(q + 1));
  auto decoded = base::PercentDecode(raw_path, /*plus_is_space=*/false);
  if (!decoded) return InvalidArgumentError("malformed percent-escape in the request path");
  if (decoded->find('\0') != std::string::npos) {
    return InvalidArgumentError("request path contains a NUL byte");
  }
  // Check dot segments on both forms: "%2e%2e" decodes to ".." as well.
  for (std::string_view path : {raw_path, std::string_view(*decoded)}) {
    for (std::string_view seg : base::Split(path.substr(1), '/')) {
      if (seg == "." || seg == "..") {
        return InvalidArgumentError("request path contains a '.' or '..' segment");
      }
    }
  }
  out.raw_path = std::string(raw_path);
  out.path = *std::move(decoded);
  return out;
}

}  // namespace warren::net
