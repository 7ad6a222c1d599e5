#include "api/validation.h"

#include <fmt/format.h>

namespace warren::api {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

constexpr size_t kMaxAnnotationBytes = 256 * 1024;

// Quotes a value for a message, shortening very long input so errors stay readable.
std::string Quote(std::string_view s) {
  if (s.size() > 80) return fmt::format("\"{}...\"", s.substr(0, 77));
  return fmt::format("\"{}\"", s);
}

}  // namespace

void FieldErrors::Add(std::string path, std::string message) {
  errors_.emplace_back(std::move(path), std::move(message));
}

void FieldErrors::Required(std::string path) { Add(std::move(path), "Required value"); }

void FieldErrors::Unsupported(std::string path, std::string_view value,
                              const std::vector<std::string_view>& supported) {
  std::string list;
  for (auto s : supported) {
    if (!list.empty()) list += ", ";
    list += fmt::format("\"{}\"", s);
  }
  Add(std::move(path),
      fmt::format("Unsupported value: {}: supported values: {}", Quote(value), list));
}

std::string FieldErrors::ToString() const {
  std::string out;
  for (const auto& [path, message] : errors_) {
    if (!out.empty()) out += "; ";
    out += path.empty() ? message : fmt::format("{}: {}", path, message);
  }
  return out;
}

Status FieldErrors::ToStatus(std::string_view prefix) const {
  if (errors_.empty()) return Status::Ok();
  return InvalidArgumentError(fmt::format("{}{}", prefix, ToString()));
}

std::string ChildPath(std::string_view parent, std::string_view field) {
  if (parent.empty()) return std::string(field);
  return fmt::format("{}.{}", parent, field);
}

std::string IndexPath(std::string_view parent, size_t index) {
  return fmt::format("{}[{}]", parent, index);
}

std::string KeyPath(std::string_view parent, std::string_view key) {
  if (key.find_first_of("./") != std::string_view::npos || key.empty()) {
    return fmt::format("{}[{}]", parent, key);
  }
  return ChildPath(parent, key);
}

std::optional<std::string> CheckDns1123Label(std::string_view s) {
  bool ok = !s.empty() && s.size() <= 63 && IsLowerAlnum(s.front()) && IsLowerAlnum(s.back());
  for (char c : s) ok = ok && (IsLowerAlnum(c) || c == '-');
  if (ok) return std::nullopt;
  if (s.size() > 63) return "must be no more than 63 characters";
  return fmt::format(
      "invalid value {}: a lowercase RFC 1123 label must consist of lower case alphanumeric "
      "characters or '-', and must start and end with an alphanumeric character (e.g. "
      "'my-name')",
      Quote(s));
}

std::optional<std::string> CheckDns1123Subdomain(std::string_view s) {
  if (s.size() > 253) return "must be no more than 253 characters";
  bool ok = !s.empty() && IsLowerAlnum(s.front()) && IsLowerAlnum(s.back());
  for (size_t i = 0; ok && i < s.size(); ++i) {
    char c = s[i];
    ok = IsLowerAlnum(c) || c == '-' || c == '.';
    // Each dot-separated part is a label: no empty parts, no '-' next to a dot.
    if (c == '.') ok = ok && IsLowerAlnum(s[i - 1]) && IsLowerAlnum(s[i + 1]);
  }
  if (ok) return std::nullopt;
  return fmt::format(
      "invalid value {}: a lowercase RFC 1123 subdomain must consist of lower case "
      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
      "character (e.g. 'example.com')",
      Quote(s));
}

std::optional<std::string> CheckQualifiedName(std::string_view s) {
  std::string_view name = s;
  if (auto slash = s.find('/'); slash != std::string_view::npos) {
    std::string_view prefix = s.substr(0, slash);
    name = s.substr(slash + 1);
    if (prefix.empty())
      return fmt::format("invalid value {}: prefix part must be non-empty", Quote(s));
    if (auto err = CheckDns1123Subdomain(prefix)) {
      return fmt::format("invalid value {}: prefix part {}", Quote(s), *err);
    }
  }
  bool ok = !name.empty() && name.size() <= 63 && IsAlnum(name.front()) && IsAlnum(name.back());
  for (char c : name) ok = ok && (IsAlnum(c) || c == '-' || c == '_' || c == '.');
  if (ok) return std::nullopt;
  if (name.empty()) return fmt::format("invalid value {}: name part must be non-empty", Quote(s));
  if (name.size() > 63)
    return fmt::format("invalid value {}: name part must be no more than 63 characters", Quote(s));
  return fmt::format(
      "invalid value {}: name part must consist of alphanumeric characters, '-', '_' or '.', "
      "and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name', or "
      "'123-abc'), with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
      Quote(s));
}

std::optional<std::string> CheckLabelValue(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool ok = s.size() <= 63 && IsAlnum(s.front()) && IsAlnum(s.back());
  for (char c : s) ok = ok && (IsAlnum(c) || c == '-' || c == '_' || c == '.');
  if (ok) return std::nullopt;
  if (s.size() > 63)
    return fmt::format("invalid value {}: must be no more than 63 characters", Quote(s));
  return fmt::format(
      "invalid value {}: a valid label must be an empty string or consist of alphanumeric "
      "characters, '-', '_' or '.', and must start and end with an alphanumeric character",
      Quote(s));
}

std::optional<std::string> CheckEnvVarName(std::string_view s) {
  bool ok = !s.empty();
  for (char c : s) ok = ok && c > ' ' && c < 127 && c != '=';
  if (ok) return std::nullopt;
  return fmt::format(
      "invalid value {}: a valid environment variable name must consist of printable "
      "characters other than '=' and must not be empty",
      Quote(s));
}

void ValidateLabels(const std::map<std::string, std::string>& labels, std::string_view path,
                    FieldErrors& errors) {
  for (const auto& [key, value] : labels) {
    if (auto err = CheckQualifiedName(key)) errors.Add(std::string(path), *err);
    if (auto err = CheckLabelValue(value)) errors.Add(KeyPath(path, key), *err);
  }
}

void ValidateAnnotations(const std::map<std::string, std::string>& annotations,
                         std::string_view path, FieldErrors& errors) {
  size_t total = 0;
  for (const auto& [key, value] : annotations) {
    if (auto err = CheckQualifiedName(key)) errors.Add(std::string(path), *err);
    total += key.size() + value.size();
  }
  if (total > kMaxAnnotationBytes) {
    errors.Add(std::string(path), fmt::format("Too long: must have at most {} bytes, got {}",
                                              kMaxAnnotationBytes, total));
  }
}

}  // namespace warren::api
