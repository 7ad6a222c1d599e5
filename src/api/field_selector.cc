#include "api/field_selector.h"

#include <fmt/format.h>

#include "base/strings.h"

namespace warren::api {
namespace {

bool IsSupportedField(std::string_view f) {
  if (f == "metadata.name" || f == "metadata.namespace" || f == "metadata.uid") return true;
  if (f.empty() || f.starts_with("metadata.") || f == "metadata") return false;
  for (auto part : base::Split(f, '.')) {
    if (part.empty()) return false;
    for (char c : part) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '-';
      if (!ok) return false;
    }
  }
  return true;
}

std::string Escape(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == ',' || c == '=' || c == '!' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

Result<FieldSelector> FieldSelector::Parse(std::string_view text) {
  FieldSelector sel;
  if (base::TrimSpace(text).empty()) return sel;
  // Split on unescaped commas, then on the first unescaped operator.
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      parts.back() += text.substr(i, 2);
      ++i;
    } else if (text[i] == ',') {
      parts.emplace_back();
    } else {
      parts.back() += text[i];
    }
  }
  for (const std::string& part : parts) {
    Requirement r;
    size_t op = std::string::npos;
    size_t op_len = 0;
    for (size_t i = 0; i < part.size(); ++i) {
      if (part[i] == '\\') {
        ++i;
        continue;
      }
      if (part.compare(i, 2, "!=") == 0) {
        op = i, op_len = 2, r.equals = false;
      } else if (part.compare(i, 2, "==") == 0) {
        op = i, op_len = 2;
      } else if (part[i] == '=') {
        op = i, op_len = 1;
      }
      if (op != std::string::npos) break;
    }
    if (op == std::string::npos) {
      return InvalidArgumentError(fmt::format(
          "invalid field selector \"{}\": \"{}\" is not of the form field=value, field==value "
          "or field!=value",
          text, part));
    }
    r.field = std::string(base::TrimSpace(std::string_view(part).substr(0, op)));
    std::string_view raw_value = std::string_view(part).substr(op + op_len);
    for (size_t i = 0; i < raw_value.size(); ++i) {
      if (raw_value[i] == '\\' && i + 1 < raw_value.size()) ++i;
      r.value.push_back(raw_value[i]);
    }
    if (!IsSupportedField(r.field)) {
      return InvalidArgumentError(fmt::format(
          "invalid field selector \"{}\": field label not supported: \"{}\" (supported: "
          "metadata.name, metadata.namespace, metadata.uid, or a path outside metadata such as "
          "status.phase)",
          text, r.field));
    }
    sel.requirements_.push_back(std::move(r));
  }
  return sel;
}

std::string FieldValue(const Object& object, std::string_view field) {
  if (field == "metadata.name") return object.metadata.name;
  if (field == "metadata.namespace") return object.metadata.namespace_;
  if (field == "metadata.uid") return object.metadata.uid;
  const Json* cur = &object.body;
  for (auto part : base::Split(field, '.')) {
    if (!cur->is_object()) return "";
    auto it = cur->find(part);
    if (it == cur->end()) return "";
    cur = &*it;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_boolean() || cur->is_number()) return cur->dump();
  return "";
}

bool FieldSelector::Matches(const Object& object) const {
  for (const auto& r : requirements_) {
    bool eq = FieldValue(object, r.field) == r.value;
    if (eq != r.equals) return false;
  }
  return true;
}

std::string FieldSelector::ToString() const {
  std::vector<std::string> parts;
  for (const auto& r : requirements_) {
    parts.push_back(fmt::format("{}{}{}", r.field, r.equals ? "=" : "!=", Escape(r.value)));
  }
  return base::Join(parts, ",");
}

}  // namespace warren::api
