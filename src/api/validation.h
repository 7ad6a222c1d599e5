#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warren::api {

// Accumulates "field.path: message" errors so one response names every problem at once, in the
// order found. Value type.
class FieldErrors {
 public:
  void Add(std::string path, std::string message);
  // Adds "<path>: Required value".
  void Required(std::string path);
  // Adds `<path>: Unsupported value: "x": supported values: "a", "b"`.
  void Unsupported(std::string path, std::string_view value,
                   const std::vector<std::string_view>& supported);

  bool empty() const { return errors_.empty(); }
  size_t size() const { return errors_.size(); }
  const std::vector<std::pair<std::string, std::string>>& errors() const { return errors_; }

  // "a.b: m1; c: m2".
  std::string ToString() const;
  // Ok when empty, else InvalidArgument "<prefix><errors>".
  Status ToStatus(std::string_view prefix = {}) const;

 private:
  std::vector<std::pair<std::string, std::string>> errors_;
};

// Field path helpers: Child("spec", "replicas") → "spec.replicas"; Index("containers", 0) →
// "containers[0]"; Key("limits", "cpu") → "limits.cpu" (or limits[a/b] for keys with dots or
// slashes).
std::string ChildPath(std::string_view parent, std::string_view field);
std::string IndexPath(std::string_view parent, size_t index);
std::string KeyPath(std::string_view parent, std::string_view key);

// Each returns nullopt when valid, else the Kubernetes-style explanation.
// RFC 1123 subdomain: <= 253 characters of [a-z0-9-.], alphanumeric at both ends.
std::optional<std::string> CheckDns1123Subdomain(std::string_view s);
// RFC 1123 label: <= 63 characters of [a-z0-9-], alphanumeric at both ends.
std::optional<std::string> CheckDns1123Label(std::string_view s);
// Qualified name: optional DNS subdomain prefix and '/', then <= 63 characters of
// [A-Za-z0-9-_.], alphanumeric at both ends. Label and annotation keys, finalizers.
std::optional<std::string> CheckQualifiedName(std::string_view s);
// Label value: empty, or <= 63 characters of [A-Za-z0-9-_.], alphanumeric at both ends.
std::optional<std::string> CheckLabelValue(std::string_view s);
// Environment variable name: printable ASCII without '=' (what Kubernetes accepts).
std::optional<std::string> CheckEnvVarName(std::string_view s);

// Validates label and annotation maps (keys, values, the 256 KiB annotation budget).
void ValidateLabels(const std::map<std::string, std::string>& labels, std::string_view path,
                    FieldErrors& errors);
void ValidateAnnotations(const std::map<std::string, std::string>& annotations,
                         std::string_view path, FieldErrors& errors);

}  // namespace warren::api
