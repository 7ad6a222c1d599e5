#include "envd/paths.h"

#include <fmt/format.h>

#include <vector>

#include "base/encoding.h"
#include "base/strings.h"

namespace warren::envd {

std::string CleanPath(std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::vector<std::string_view> parts;
  for (auto part : base::Split(path, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else if (!absolute) {
        parts.push_back(part);
      }
      continue;
    }
    parts.push_back(part);
  }
  std::string out = absolute ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += '/';
    out += parts[i];
  }
  if (out.empty()) out = ".";
  return out;
}

Result<std::string> ResolvePath(std::string_view path, const os::UserInfo& user,
                                const std::optional<std::string>& default_workdir) {
  if (path.find('\0') != std::string_view::npos) {
    return InvalidArgumentError("path contains a NUL byte");
  }
  if (path.size() > 4096) return InvalidArgumentError("path is longer than 4096 bytes");
  std::string p(path);
  if (p.empty()) {
    if (default_workdir && !default_workdir->empty()) {
      p = *default_workdir;
    } else {
      return CleanPath(user.home.empty() ? "/" : user.home);
    }
  }
  if (p.front() == '~') {
    if (p.size() > 1 && p[1] != '/') {
      return InvalidArgumentError(
          fmt::format("path '{}' is invalid: '~user' expansion is not supported", p));
    }
    p = user.home + p.substr(1);
  }
  if (p.front() == '/') return CleanPath(p);
  // Relative: below the home directory, and it must stay there.
  const std::string joined = CleanPath(p);
  if (joined == ".." || joined.rfind("../", 0) == 0) {
    return InvalidArgumentError(
        fmt::format("path '{}' escapes the home directory; give an absolute path instead", path));
  }
  const std::string home = user.home.empty() ? "/" : user.home;
  return CleanPath(home + "/" + joined);
}

Result<std::string> UserFromBasicAuth(std::optional<std::string_view> authorization,
                                      std::string_view fallback) {
  if (!authorization) return std::string(fallback);
  std::string_view v = base::TrimSpace(*authorization);
  if (v.size() < 6 || !base::EqualsIgnoreCase(v.substr(0, 6), "basic ")) {
    return InvalidArgumentError("Authorization header is not Basic authentication");
  }
  auto decoded = base::Base64Decode(base::TrimSpace(v.substr(6)));
  if (!decoded) return InvalidArgumentError("Authorization header is not valid base64");
  auto colon = decoded->find(':');
  std::string name = colon == std::string::npos ? *decoded : decoded->substr(0, colon);
  if (name.empty()) return std::string(fallback);
  return name;
}

}  // namespace warren::envd
