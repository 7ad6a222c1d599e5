#include "api/label_selector.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/validation.h"
#include "base/strings.h"

namespace warren::api {
namespace {

using Op = LabelRequirement::Op;

enum class Tok { kEnd, kIdent, kNot, kEq, kDoubleEq, kNotEq, kComma, kOpen, kClose, kGt, kLt };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;
  size_t column = 0;  // 1-based
};

bool IsIdentChar(char c) {
  return !(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '!' || c == '=' || c == ',' ||
           c == '(' || c == ')' || c == '<' || c == '>');
}

std::string_view TokName(Tok t) {
  switch (t) {
    case Tok::kEnd:
      return "end of input";
    case Tok::kIdent:
      return "identifier";
    case Tok::kNot:
      return "'!'";
    case Tok::kEq:
      return "'='";
    case Tok::kDoubleEq:
      return "'=='";
    case Tok::kNotEq:
      return "'!='";
    case Tok::kComma:
      return "','";
    case Tok::kOpen:
      return "'('";
    case Tok::kClose:
      return "')'";
    case Tok::kGt:
      return "'>'";
    case Tok::kLt:
      return "'<'";
  }
  return "token";
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) { Advance(); }

  Result<std::vector<LabelRequirement>> ParseAll() {
    std::vector<LabelRequirement> out;
    if (tok_.kind == Tok::kEnd) return out;
    while (true) {
      ASSIGN_OR_RETURN(LabelRequirement r, ParseRequirement());
      out.push_back(std::move(r));
      if (tok_.kind == Tok::kEnd) return out;
      if (tok_.kind != Tok::kComma) return Expected("',' or end of input");
      Advance();
    }
  }

 private:
  void Advance() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
    tok_ = Token{};
    tok_.column = pos_ + 1;
    if (pos_ >= text_.size()) return;
    char c = text_[pos_];
    auto single = [&](Tok k) {
      tok_.kind = k;
      tok_.text = std::string(1, c);
      ++pos_;
    };
    auto peek_eq = [&] { return pos_ + 1 < text_.size() && text_[pos_ + 1] == '='; };
    switch (c) {
      case '!':
        if (peek_eq()) {
          tok_.kind = Tok::kNotEq;
          tok_.text = "!=";
          pos_ += 2;
        } else {
          single(Tok::kNot);
        }
        return;
      case '=':
        if (peek_eq()) {
          tok_.kind = Tok::kDoubleEq;
          tok_.text = "==";
          pos_ += 2;
        } else {
          single(Tok::kEq);
        }
        return;
      case ',':
        single(Tok::kComma);
        return;
      case '(':
        single(Tok::kOpen);
        return;
      case ')':
        single(Tok::kClose);
        return;
      case '>':
        single(Tok::kGt);
        return;
      case '<':
        single(Tok::kLt);
        return;
      default:
        break;
    }
    size_t start = pos_;
    while (pos_ < text_.size() && IsIdentChar(text_[pos_])) ++pos_;
    tok_.kind = Tok::kIdent;
    tok_.text = std::string(text_.substr(start, pos_ - start));
  }

  Status Error(std::string message) const {
    return InvalidArgumentError(fmt::format(
        "unable to parse label selector \"{}\": {} at column {}", text_, message, tok_.column));
  }
  Status Expected(std::string_view what) const {
    return Error(fmt::format("expected {}, found {}", what,
                             tok_.kind == Tok::kIdent ? fmt::format("\"{}\"", tok_.text)
                                                      : std::string(TokName(tok_.kind))));
  }

  Status CheckKey(const std::string& key, size_t column) const {
    if (auto err = CheckQualifiedName(key)) {
      return InvalidArgumentError(fmt::format(
          "unable to parse label selector \"{}\": key at column {}: {}", text_, column, *err));
    }
    return Status::Ok();
  }
  Status CheckValue(const std::string& value, size_t column) const {
    if (auto err = CheckLabelValue(value)) {
      return InvalidArgumentError(fmt::format(
          "unable to parse label selector \"{}\": value at column {}: {}", text_, column, *err));
    }
    return Status::Ok();
  }

  Result<LabelRequirement> ParseRequirement() {
    LabelRequirement r;
    if (tok_.kind == Tok::kNot) {
      Advance();
      if (tok_.kind != Tok::kIdent) return Expected("a label key after '!'");
      RETURN_IF_ERROR(CheckKey(tok_.text, tok_.column));
      r.key = tok_.text;
      r.op = Op::kDoesNotExist;
      Advance();
      return r;
    }
    if (tok_.kind != Tok::kIdent) return Expected("a label key");
    RETURN_IF_ERROR(CheckKey(tok_.text, tok_.column));
    r.key = tok_.text;
    Advance();
    switch (tok_.kind) {
      case Tok::kEnd:
      case Tok::kComma:
        r.op = Op::kExists;
        return r;
      case Tok::kEq:
      case Tok::kDoubleEq:
      case Tok::kNotEq: {
        r.op = tok_.kind == Tok::kNotEq ? Op::kNotEquals : Op::kEquals;
        Advance();
        if (tok_.kind == Tok::kIdent) {
          RETURN_IF_ERROR(CheckValue(tok_.text, tok_.column));
          r.values.push_back(tok_.text);
          Advance();
        } else if (tok_.kind == Tok::kEnd || tok_.kind == Tok::kComma) {
          r.values.emplace_back();  // "a=" selects the empty value
        } else {
          return Expected("a label value");
        }
        return r;
      }
      case Tok::kGt:
      case Tok::kLt: {
        r.op = tok_.kind == Tok::kGt ? Op::kGreaterThan : Op::kLessThan;
        Advance();
        if (tok_.kind != Tok::kIdent || !base::ParseInt64(tok_.text)) {
          return Expected("an integer value");
        }
        r.values.push_back(tok_.text);
        Advance();
        return r;
      }
      case Tok::kIdent:
        if (tok_.text == "in" || tok_.text == "notin") {
          r.op = tok_.text == "in" ? Op::kIn : Op::kNotIn;
          Advance();
          RETURN_IF_ERROR(ParseSet(r));
          return r;
        }
        return Expected("an operator ('=', '==', '!=', 'in', 'notin', '>', '<')");
      default:
        return Expected("an operator ('=', '==', '!=', 'in', 'notin', '>', '<')");
    }
  }

  Status ParseSet(LabelRequirement& r) {
    if (tok_.kind != Tok::kOpen) return Expected("'('");
    Advance();
    if (tok_.kind == Tok::kClose)
      return Error("for 'in' and 'notin' the set of values can't be empty");
    while (true) {
      if (tok_.kind == Tok::kIdent) {
        RETURN_IF_ERROR(CheckValue(tok_.text, tok_.column));
        r.values.push_back(tok_.text);
        Advance();
      } else if (tok_.kind == Tok::kComma || tok_.kind == Tok::kClose) {
        return Error("empty value in a set (select the empty value with 'key=')");
      } else {
        return Expected("a label value");
      }
      if (tok_.kind == Tok::kClose) {
        Advance();
        break;
      }
      if (tok_.kind != Tok::kComma) return Expected("')' or ','");
      Advance();
    }
    std::sort(r.values.begin(), r.values.end());
    r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
    return Status::Ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
  Token tok_;
};

}  // namespace

bool LabelRequirement::Matches(const std::map<std::string, std::string>& labels) const {
  auto it = labels.find(key);
  bool has = it != labels.end();
  auto in_values = [&] {
    return has && std::binary_search(values.begin(), values.end(), it->second);
  };
  switch (op) {
    case Op::kExists:
      return has;
    case Op::kDoesNotExist:
      return !has;
    case Op::kEquals:
      return has && it->second == values.front();
    case Op::kNotEquals:
      return !has || it->second != values.front();
    case Op::kIn:
      return in_values();
    case Op::kNotIn:
      return !in_values();
    case Op::kGreaterThan:
    case Op::kLessThan: {
      if (!has) return false;
      auto have = base::ParseInt64(it->second);
      auto want = base::ParseInt64(values.front());
      if (!have || !want) return false;
      return op == Op::kGreaterThan ? *have > *want : *have < *want;
    }
  }
  return false;
}

LabelSelector::LabelSelector(std::vector<LabelRequirement> requirements)
    : requirements_(std::move(requirements)) {
  std::stable_sort(requirements_.begin(), requirements_.end(),
                   [](const auto& a, const auto& b) { return a.key < b.key; });
}

Result<LabelSelector> LabelSelector::Parse(std::string_view text) {
  Parser parser(text);
  ASSIGN_OR_RETURN(auto reqs, parser.ParseAll());
  return LabelSelector(std::move(reqs));
}

Result<LabelSelector> LabelSelector::FromParts(
    const std::map<std::string, std::string>& match_labels,
    const std::vector<Expression>& match_expressions, std::string_view path) {
  FieldErrors errors;
  std::vector<LabelRequirement> reqs;
  std::string labels_path = ChildPath(path, "matchLabels");
  ValidateLabels(match_labels, labels_path, errors);
  for (const auto& [k, v] : match_labels) {
    reqs.push_back(LabelRequirement{k, Op::kEquals, {v}});
  }
  for (size_t i = 0; i < match_expressions.size(); ++i) {
    const Expression& e = match_expressions[i];
    std::string p = IndexPath(ChildPath(path, "matchExpressions"), i);
    if (auto err = CheckQualifiedName(e.key)) errors.Add(ChildPath(p, "key"), *err);
    LabelRequirement r{e.key, Op::kExists, e.values};
    if (e.op == "In" || e.op == "NotIn") {
      r.op = e.op == "In" ? Op::kIn : Op::kNotIn;
      if (e.values.empty()) {
        errors.Add(ChildPath(p, "values"), "must be specified when `operator` is 'In' or 'NotIn'");
      }
      for (size_t j = 0; j < e.values.size(); ++j) {
        if (auto err = CheckLabelValue(e.values[j])) {
          errors.Add(IndexPath(ChildPath(p, "values"), j), *err);
        }
      }
      std::sort(r.values.begin(), r.values.end());
      r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
    } else if (e.op == "Exists" || e.op == "DoesNotExist") {
      r.op = e.op == "Exists" ? Op::kExists : Op::kDoesNotExist;
      if (!e.values.empty()) {
        errors.Add(ChildPath(p, "values"),
                   "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
      }
    } else {
      errors.Unsupported(ChildPath(p, "operator"), e.op, {"In", "NotIn", "Exists", "DoesNotExist"});
    }
    reqs.push_back(std::move(r));
  }
  RETURN_IF_ERROR(errors.ToStatus());
  return LabelSelector(std::move(reqs));
}

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& r : requirements_) {
    if (!r.Matches(labels)) return false;
  }
  return true;
}

std::string LabelSelector::ToString() const {
  std::vector<std::string> parts;
  for (const auto& r : requirements_) {
    switch (r.op) {
      case Op::kExists:
        parts.push_back(r.key);
        break;
      case Op::kDoesNotExist:
        parts.push_back("!" + r.key);
        break;
      case Op::kEquals:
        parts.push_back(r.key + "=" + r.values.front());
        break;
      case Op::kNotEquals:
        parts.push_back(r.key + "!=" + r.values.front());
        break;
      case Op::kGreaterThan:
        parts.push_back(r.key + ">" + r.values.front());
        break;
      case Op::kLessThan:
        parts.push_back(r.key + "<" + r.values.front());
        break;
      case Op::kIn:
      case Op::kNotIn:
        parts.push_back(fmt::format("{} {} ({})", r.key, r.op == Op::kIn ? "in" : "notin",
                                    base::Join(r.values, ",")));
        break;
    }
  }
  return base::Join(parts, ",");
}

}  // namespace warren::api
