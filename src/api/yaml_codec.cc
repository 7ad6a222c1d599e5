#include "api/yaml_codec.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "base/strings.h"

namespace warren::api {
namespace {

constexpr size_t kMaxYamlBytes = 8 * 1024 * 1024;
// yaml-cpp's parser recurses once per nesting level; these bound its stack use.
constexpr size_t kMaxFlowDepth = 100;
constexpr size_t kMaxIndent = 1000;
// What alias expansion may produce, relative to the input size: node count and bytes (a node
// costs kNodeCost bytes plus its scalar's length), so a short document aliasing a long string
// many times is bounded as well as one aliasing many nodes.
constexpr size_t kExpansionFactor = 16;
constexpr size_t kMinExpansionBudget = 4 << 20;
constexpr size_t kNodeCost = 32;

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

// yaml-cpp 0.7's LoadAll loops forever, allocating a null document per turn, when a document
// ends before a token its parser cannot consume (fuzzing found a dangling "? " after an anchor;
// a stray ',' was another): every turn starts a new document at the same token. This pass runs
// the parser over events only and refuses the stream when documents stop advancing, before
// LoadAll builds a node for each.
class DocumentProgress : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (documents_ > 0 && mark.pos == last_start_.pos) {
      if (++stalled_ > kMaxStalledDocuments) {
        throw YamlError(mark, "the parser cannot go past this token");
      }
    } else {
      stalled_ = 0;
    }
    last_start_ = mark;
    ++documents_;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  // A document that consumes only zero-width tokens could start where the one before did; a
  // parser that is stuck does so forever.
  static constexpr int kMaxStalledDocuments = 64;
  YAML::Mark last_start_;
  size_t documents_ = 0;
  int stalled_ = 0;
};

void CheckDocumentsAdvance(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentProgress progress;
  while (parser.HandleNextDocument(progress)) {
  }
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// "|", ">", "|-", ">+2": a block scalar header; the lines after it are content.
bool IsBlockScalarHeader(std::string_view token) {
  if (token.empty() || (token.front() != '|' && token.front() != '>')) return false;
  for (char c : token.substr(1)) {
    if (c != '-' && c != '+' && !(c >= '1' && c <= '9')) return false;
  }
  return true;
}

// Rejects, before yaml-cpp sees it, input its parser mishandles: flow nesting or indentation
// deep enough to exhaust its recursion, and a ',' token outside flow collections (at the start
// of a line, after a quoted scalar or a closed collection), on which yaml-cpp 0.7 allocates
// without bound. A plain scalar cannot start with ',', so such a token is never valid YAML
// (except on the continuation line of a multi-line plain scalar, which we also refuse: quote
// it). Commas inside plain scalars, quoted strings, comments and block scalars are fine.
Status CheckShape(std::string_view text) {
  if (text.size() > kMaxYamlBytes) {
    return InvalidArgumentError(fmt::format("invalid YAML: document is {} bytes; the limit is {}",
                                            text.size(), kMaxYamlBytes));
  }
  size_t depth = 0;        // flow collection nesting
  char quote = 0;          // inside a quoted scalar (may span lines)
  long block_indent = -1;  // inside a block scalar whose header line had this indentation
  size_t line_no = 0;
  for (std::string_view rest = text; !rest.empty() || line_no == 0;) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    ++line_no;
    size_t indent = 0;
    while (indent < line.size() && line[indent] == ' ') ++indent;
    bool blank = indent == line.size() || line.find_first_not_of(" \t\r") == std::string_view::npos;
    if (block_indent >= 0) {
      if (blank || static_cast<long>(indent) > block_indent) continue;
      block_indent = -1;
    }
    if (!quote) {
      size_t lead = line.find_first_not_of(" -");
      if ((lead == std::string_view::npos ? line.size() : lead) > kMaxIndent) {
        return InvalidArgumentError(fmt::format(
            "invalid YAML at line {}: indented more than {} columns", line_no, kMaxIndent));
      }
    }
    std::string_view last_token;
    // Where a new token may begin, as yaml-cpp's scanner sees it: the line start, after a
    // blank, after a flow indicator, right after a quoted scalar closes.
    bool token_start = true;
    for (size_t i = 0; i < line.size();) {
      char c = line[i];
      if (quote) {
        if (quote == '"' && c == '\\') {
          i += 2;
        } else if (quote == '\'' && c == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
          i += 2;
        } else {
          if (c == quote) {
            quote = 0;
            token_start = true;
          }
          ++i;
        }
        continue;
      }
      if (IsBlank(c)) {
        token_start = true;
        ++i;
        continue;
      }
      bool after_blank = i == 0 || IsBlank(line[i - 1]);
      if (c == '#' && after_blank) break;  // comment
      if (c == '[' || c == '{' || c == ']' || c == '}' || (c == ',' && depth > 0)) {
        if (c == '[' || c == '{') {
          if (++depth > kMaxFlowDepth) {
            return InvalidArgumentError(fmt::format(
                "invalid YAML at line {}: nested deeper than {} levels", line_no, kMaxFlowDepth));
          }
        } else if (c != ',' && depth > 0) {
          --depth;
        }
        last_token = {};
        token_start = true;
        ++i;
        continue;
      }
      if (token_start && c == ',') {
        return InvalidArgumentError(fmt::format(
            "invalid YAML at line {}: unexpected ',' outside a flow collection (quote a value "
            "that begins with ',')",
            line_no));
      }
      if (token_start && (c == '"' || c == '\'')) {
        quote = c;
        last_token = {};
        ++i;
        continue;
      }
      // A token: up to a blank, or a flow indicator inside a flow collection. Tags, anchors
      // and aliases end at flow indicators everywhere, and what follows starts a new token.
      const bool property = token_start && (c == '!' || c == '&' || c == '*');
      size_t j = i;
      while (j < line.size() && !IsBlank(line[j]) &&
             !((depth > 0 || property) && (line[j] == ',' || line[j] == '[' || line[j] == ']' ||
                                           line[j] == '{' || line[j] == '}'))) {
        ++j;
      }
      last_token = line.substr(i, j - i);
      token_start = property;
      i = j;
    }
    if (!quote && depth == 0 && IsBlockScalarHeader(last_token)) {
      block_indent = static_cast<long>(indent);
    }
    if (nl == std::string_view::npos) break;
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

// The length of the UTF-8 sequence at s[i], or 0 when none starts there.
size_t Utf8SequenceAt(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  uint32_t cp = len == 1 ? c : c & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc >> 6) != 0x2) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
    return 0;
  }
  return len;
}

// Manifests are UTF-8 text, as JSON requires; other bytes would not survive a round trip.
bool IsValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = Utf8SequenceAt(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// A scalar's text. yaml-cpp 0.7 decodes the escapes \N and \_ (U+0085, U+00A0) to the single
// bytes 0x85 and 0xA0, not to UTF-8; the input was valid UTF-8, so such a byte standing alone
// can only come from one of them and is re-encoded.
std::string ScalarText(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  if (IsValidUtf8(s)) return s;
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size();) {
    if (size_t len = Utf8SequenceAt(s, i)) {
      out.append(s, i, len);
      i += len;
      continue;
    }
    auto c = static_cast<unsigned char>(s[i]);
    if (c != 0x85 && c != 0xa0) throw YamlError(node.Mark(), "a scalar is not valid UTF-8");
    out += '\xc2';
    out += static_cast<char>(c);
    ++i;
  }
  return out;
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
  explicit Converter(size_t byte_budget) : budget_(byte_budget) {}

  Json Convert(const YAML::Node& node, size_t depth = 0) {
    // Bounds the recursion, including through an alias inside the node it names.
    if (depth > kMaxJsonDepth) {
      throw YamlError(node.Mark(), fmt::format("nested deeper than {} levels (or an alias refers "
                                               "to a node that contains it)",
                                               kMaxJsonDepth));
    }
    size_t cost = kNodeCost + (node.IsScalar() ? node.Scalar().size() : 0);
    if (cost > budget_) {
      throw YamlError(node.Mark(),
                      "document expands to too many nodes (anchors and aliases are bounded)");
    }
    budget_ -= cost;
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
        for (const auto& child : node) arr.push_back(Convert(child, depth + 1));
        return arr;
      }
      case YAML::NodeType::Map: {
        Json obj = Json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) {
            throw YamlError(kv.first.Mark(), "mapping keys must be scalars");
          }
          std::string key = ScalarText(kv.first);
          if (obj.contains(key)) {
            throw YamlError(kv.first.Mark(), fmt::format("duplicate key \"{}\"", key));
          }
          obj[key] = Convert(kv.second, depth + 1);
        }
        return obj;
      }
    }
    return nullptr;
  }

 private:
  Json ConvertScalar(const YAML::Node& node, const std::string& tag) {
    std::string s = ScalarText(node);
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
  // Flow indicators and quotes anywhere: quoting keeps every reader (and our own pre-check of
  // yaml-cpp's input, which looks at tokens after blanks) from seeing structure in the scalar.
  if (s.find_first_of(",[]{}\"'\t") != std::string::npos) return true;
  // An indicator at the start, a mapping value or a comment inside. "nginx:1.25" and
  // "http://host/a#b" stay plain, as kubectl prints them.
  // "-", "?" and ":" are indicators only before a blank: "-c" stays plain.
  if (std::string_view("#&*!|>%@`").find(s.front()) != std::string_view::npos) return true;
  if (std::string_view("-?:").find(s.front()) != std::string_view::npos &&
      (s.size() == 1 || s[1] == ' ')) {
    return true;
  }
  if (s.starts_with("---")) return true;  // the document start marker
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos || s.back() == ':') {
    return true;
  }
  if (s.starts_with("...")) return true;          // the document end marker
  if (!ResolvePlain(s).is_string()) return true;  // "true", "1", "null" read back as non-strings
  if (IsYaml11Special(s)) return true;
  if (s.front() == ' ' || s.back() == ' ') return true;
  return false;
}

bool HasUnicodeLineBreak(const std::string& s) {
  return s.find("\xc2\x85") != std::string::npos || s.find("\xe2\x80\xa8") != std::string::npos ||
         s.find("\xe2\x80\xa9") != std::string::npos;
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
        if (HasUnicodeLineBreak(key)) {
          out << YAML::EscapeNonAscii << YAML::DoubleQuoted << key;
        } else if (NeedsQuotes(key)) {
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
      // yaml-cpp writes a literal block with clip chomping, which keeps one final line break:
      // text ending in several, or made of line breaks only, goes double-quoted.
      const bool one_final_break = s.ends_with('\n') && (s.size() == 1 || s[s.size() - 2] != '\n');
      if (HasUnicodeLineBreak(s)) {
        // YAML 1.1 readers take NEL, LS and PS as line breaks, in any style but escaped.
        out << YAML::EscapeNonAscii << YAML::DoubleQuoted << s;
      } else if (printable && one_final_break && s.find_first_not_of('\n') != std::string::npos &&
                 s.find(" \n") == std::string::npos && s.front() != ' ') {
        out << YAML::Literal << s;
      } else if (printable && s.find('\n') == std::string::npos &&
                 s.find('"') != std::string::npos && s.find('\'') == std::string::npos) {
        // JSON in an annotation reads better single-quoted, as kubectl prints it.
        out << YAML::SingleQuoted << s;
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
  if (!IsValidUtf8(text)) return InvalidArgumentError("invalid YAML: the text is not valid UTF-8");
  // YAML streams are printable text: no C0 control characters but tab, newline and return.
  size_t line = 1;
  for (char c : text) {
    if (c == '\n') ++line;
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      return InvalidArgumentError(fmt::format(
          "invalid YAML at line {}: control character 0x{:02x} (escape it in a double-quoted "
          "string)",
          line, u));
    }
  }
  std::vector<Json> docs;
  try {
    std::string owned(text);
    CheckDocumentsAdvance(owned);
    std::vector<YAML::Node> nodes = YAML::LoadAll(owned);
    Converter converter(std::max(kMinExpansionBudget, text.size() * kExpansionFactor));
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
    // Null documents are skipped, as empty YAML documents are.
    if (doc.is_array()) {
      for (auto& d : doc) {
        if (!d.is_null()) docs.push_back(std::move(d));
      }
    } else if (!doc.is_null()) {
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
