#include "api/yaml_codec.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

#include "base/strings.h"

namespace warren::api {
namespace {

constexpr size_t kMaxYamlBytes = 8 * 1024 * 1024;
// yaml-cpp's parser recurses once per nesting level; these bound its stack use.
constexpr size_t kMaxFlowDepth = 100;
constexpr size_t kMaxIndent = 1000;
// Nodes produced after alias expansion, relative to the input size.
constexpr size_t kMaxNodesPerByte = 4;
constexpr size_t kMinNodeBudget = 100000;

class YamlError {
 public:
  YamlError(const YAML::Mark& mark, std::string message) {
    if (mark.line >= 0) {
      text = fmt::format("invalid YAML at line {}, column {}: {}", mark.line + 1, mark.column + 1,
                         message);
    } else {
      text = fmt::format("invalid YAML: {}", message);
    }
  }
  std::string text;
};

// Rejects input that would drive yaml-cpp's recursive parser too deep: deep flow nesting
// ([[[[...) and absurd indentation (block nesting needs at least one column per level).
Status CheckShape(std::string_view text) {
  if (text.size() > kMaxYamlBytes) {
    return InvalidArgumentError(fmt::format("invalid YAML: document is {} bytes; the limit is {}",
                                            text.size(), kMaxYamlBytes));
  }
  size_t depth = 0;
  size_t line = 1;
  size_t indent = 0;
  bool at_line_start = true;
  char quote = 0;
  bool comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      at_line_start = true;
      indent = 0;
      comment = false;
      continue;
    }
    if (at_line_start) {
      if (c == ' ' || c == '-') {
        if (++indent > kMaxIndent) {
          return InvalidArgumentError(fmt::format(
              "invalid YAML at line {}: indented more than {} columns", line, kMaxIndent));
        }
        continue;
      }
      at_line_start = false;
    }
    if (comment) continue;
    if (quote) {
      if (c == '\\' && quote == '"') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '#') {
      comment = true;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxFlowDepth) {
        return InvalidArgumentError(fmt::format(
            "invalid YAML at line {}: nested deeper than {} levels", line, kMaxFlowDepth));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::Ok();
}

bool IsNullWord(std::string_view s) {
  return s == "null" || s == "Null" || s == "NULL" || s == "~" || s.empty();
}
bool IsTrueWord(std::string_view s) { return s == "true" || s == "True" || s == "TRUE"; }
bool IsFalseWord(std::string_view s) { return s == "false" || s == "False" || s == "FALSE"; }

bool AllOf(std::string_view s, std::string_view chars) {
  return !s.empty() && s.find_first_not_of(chars) == std::string_view::npos;
}

// Integers of the core schema: [-+]?[0-9]+, 0o[0-7]+, 0x[0-9a-fA-F]+.
std::optional<Json> ParseYamlInt(std::string_view s) {
  std::string_view digits = s;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    base = s[1] == 'x' ? 16 : 8;
    digits = s.substr(2);
    if (!AllOf(digits, base == 16 ? "0123456789abcdefABCDEF" : "01234567")) return std::nullopt;
  } else if (!AllOf(digits, "0123456789")) {
    return std::nullopt;
  }
  std::string str(digits);
  errno = 0;
  unsigned long long v = std::strtoull(str.c_str(), nullptr, base);
  if (errno == ERANGE) return Json(std::strtod(std::string(s).c_str(), nullptr));
  if (negative) {
    if (v > static_cast<unsigned long long>(INT64_MAX) + 1) return Json(-static_cast<double>(v));
    return Json(static_cast<int64_t>(-static_cast<__int128>(v)));
  }
  if (v <= static_cast<unsigned long long>(INT64_MAX)) return Json(static_cast<int64_t>(v));
  return Json(static_cast<uint64_t>(v));
}

// Floats of the core schema, without .inf/.nan (JSON cannot carry them; they stay strings).
std::optional<Json> ParseYamlFloat(std::string_view s) {
  std::string_view rest = s;
  if (!rest.empty() && (rest[0] == '-' || rest[0] == '+')) rest.remove_prefix(1);
  size_t i = 0;
  size_t digits = 0;
  while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i, ++digits;
  if (i < rest.size() && rest[i] == '.') {
    ++i;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < rest.size() && (rest[i] == 'e' || rest[i] == 'E')) {
    ++i;
    if (i < rest.size() && (rest[i] == '-' || rest[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (i != rest.size()) return std::nullopt;
  double v = std::strtod(std::string(s).c_str(), nullptr);
  if (!std::isfinite(v)) return std::nullopt;
  return Json(v);
}

// What a plain (unquoted, untagged) scalar means.
Json ResolvePlain(const std::string& s) {
  if (IsNullWord(s)) return nullptr;
  if (IsTrueWord(s)) return true;
  if (IsFalseWord(s)) return false;
  if (auto i = ParseYamlInt(s)) return *i;
  if (auto f = ParseYamlFloat(s)) return *f;
  return s;
}

class Converter {
 public:
  explicit Converter(size_t node_budget) : budget_(node_budget) {}

  Json Convert(const YAML::Node& node) {
    if (budget_-- == 0) {
      throw YamlError(node.Mark(),
                      "document expands to too many nodes (anchors and aliases are bounded)");
    }
    const std::string& tag = node.Tag();
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        if (tag == "tag:yaml.org,2002:str") return "";
        return nullptr;
      case YAML::NodeType::Scalar:
        return ConvertScalar(node, tag);
      case YAML::NodeType::Sequence: {
        Json arr = Json::array();
        for (const auto& child : node) arr.push_back(Convert(child));
        return arr;
      }
      case YAML::NodeType::Map: {
        Json obj = Json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) {
            throw YamlError(kv.first.Mark(), "mapping keys must be scalars");
          }
          const std::string& key = kv.first.Scalar();
          if (obj.contains(key)) {
            throw YamlError(kv.first.Mark(), fmt::format("duplicate key \"{}\"", key));
          }
          obj[key] = Convert(kv.second);
        }
        return obj;
      }
    }
    return nullptr;
  }

 private:
  Json ConvertScalar(const YAML::Node& node, const std::string& tag) {
    const std::string& s = node.Scalar();
    if (tag == "?") return ResolvePlain(s);
    if (tag == "!" || tag == "tag:yaml.org,2002:str" || tag == "tag:yaml.org,2002:binary" ||
        tag == "tag:yaml.org,2002:timestamp") {
      return s;
    }
    if (tag == "tag:yaml.org,2002:int") {
      if (auto i = ParseYamlInt(s)) return *i;
      throw YamlError(node.Mark(), fmt::format("\"{}\" is not an integer", s));
    }
    if (tag == "tag:yaml.org,2002:float") {
      if (auto i = ParseYamlInt(s)) return Json(i->get<double>());
      if (auto f = ParseYamlFloat(s)) return *f;
      throw YamlError(node.Mark(), fmt::format("\"{}\" is not a number", s));
    }
    if (tag == "tag:yaml.org,2002:bool") {
      if (IsTrueWord(s)) return true;
      if (IsFalseWord(s)) return false;
      throw YamlError(node.Mark(), fmt::format("\"{}\" is not a boolean", s));
    }
    if (tag == "tag:yaml.org,2002:null") return nullptr;
    throw YamlError(node.Mark(), fmt::format("unsupported tag \"{}\"", tag));
  }

  size_t budget_;
};

std::string_view FirstNonBlank(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      break;
    }
  }
  return text.substr(i);
}

// Plain scalars YAML 1.1 readers (PyYAML, go-yaml v2) would not read as strings: yes/no/on/off
// and timestamps. We read them as strings, but quote them so every reader agrees.
bool IsYaml11Special(const std::string& s) {
  static const char* kWords[] = {"y",  "Y",  "yes", "Yes", "YES", "n",   "N",   "no",
                                 "No", "NO", "on",  "On",  "ON",  "off", "Off", "OFF"};
  for (const char* w : kWords) {
    if (s == w) return true;
  }
  // 2026-01-02 or 2026-01-02T...: a date followed by anything.
  return s.size() >= 10 && std::isdigit(static_cast<unsigned char>(s[0])) && s[4] == '-' &&
         s[7] == '-' && std::isdigit(static_cast<unsigned char>(s[5])) &&
         std::isdigit(static_cast<unsigned char>(s[8]));
}

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  if (!ResolvePlain(s).is_string()) return true;  // "true", "1", "null" read back as non-strings
  if (IsYaml11Special(s)) return true;
  if (s.front() == ' ' || s.back() == ' ') return true;
  return false;
}

void Emit(YAML::Emitter& out, const Json& j) {
  switch (j.type()) {
    case Json::value_t::object:
      if (j.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [key, value] : j.items()) {
        out << YAML::Key;
        if (NeedsQuotes(key)) {
          out << YAML::DoubleQuoted << key;
        } else {
          out << key;
        }
        out << YAML::Value;
        Emit(out, value);
      }
      out << YAML::EndMap;
      return;
    case Json::value_t::array:
      if (j.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const auto& v : j) Emit(out, v);
      out << YAML::EndSeq;
      return;
    case Json::value_t::string: {
      const std::string& s = j.get_ref<const std::string&>();
      bool printable = std::all_of(s.begin(), s.end(), [](char c) {
        return c == '\n' || static_cast<unsigned char>(c) >= 0x20;
      });
      if (s.find('\n') != std::string::npos && printable && s.back() == '\n' &&
          s.find(" \n") == std::string::npos && s.front() != ' ') {
        out << YAML::Literal << s;
      } else if (NeedsQuotes(s) || !printable) {
        out << YAML::DoubleQuoted << s;
      } else {
        out << s;
      }
      return;
    }
    case Json::value_t::boolean:
      out << (j.get<bool>() ? "true" : "false");
      return;
    case Json::value_t::null:
      out << YAML::Null;
      return;
    default:
      // Numbers: JSON's own spelling keeps 1.0 a float when read back.
      out << j.dump();
      return;
  }
}

}  // namespace

Result<std::vector<Json>> ParseYamlDocuments(std::string_view text) {
  RETURN_IF_ERROR(CheckShape(text));
  std::vector<Json> docs;
  try {
    std::vector<YAML::Node> nodes = YAML::LoadAll(std::string(text));
    Converter converter(std::max(kMinNodeBudget, text.size() * kMaxNodesPerByte));
    for (const auto& node : nodes) {
      if (node.IsNull() && node.Tag() != "tag:yaml.org,2002:str") continue;  // empty document
      docs.push_back(converter.Convert(node));
    }
  } catch (const YamlError& e) {
    return InvalidArgumentError(e.text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(YamlError(e.mark, e.msg).text);
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("invalid YAML: {}", e.what()));
  }
  return docs;
}

Result<Json> ParseYaml(std::string_view text) {
  ASSIGN_OR_RETURN(auto docs, ParseYamlDocuments(text));
  if (docs.size() != 1) {
    return InvalidArgumentError(
        fmt::format("expected exactly one YAML document, found {}", docs.size()));
  }
  return std::move(docs.front());
}

Result<std::vector<Json>> ParseManifests(std::string_view text) {
  std::string_view rest = FirstNonBlank(text);
  if (!rest.empty() && (rest.front() == '{' || rest.front() == '[')) {
    ASSIGN_OR_RETURN(Json doc, ParseJson(text));
    std::vector<Json> docs;
    if (doc.is_array()) {
      for (auto& d : doc) docs.push_back(std::move(d));
    } else {
      docs.push_back(std::move(doc));
    }
    return docs;
  }
  return ParseYamlDocuments(text);
}

std::string DumpYaml(const Json& doc) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetMapFormat(YAML::Block);
  out.SetSeqFormat(YAML::Block);
  Emit(out, doc);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

}  // namespace warren::api
