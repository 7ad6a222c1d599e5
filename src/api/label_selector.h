#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace warren::api {

// One requirement of a label selector.
struct LabelRequirement {
  enum class Op {
    kEquals,
    kNotEquals,
    kIn,
    kNotIn,
    kExists,
    kDoesNotExist,
    kGreaterThan,
    kLessThan
  };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;  // sorted; one for =, !=, >, <; none for exists

  bool Matches(const std::map<std::string, std::string>& labels) const;
  friend bool operator==(const LabelRequirement&, const LabelRequirement&) = default;
};

// A Kubernetes label selector: requirements ANDed together. The empty selector matches every
// object. Value type; thread-compatible.
class LabelSelector {
 public:
  LabelSelector() = default;
  explicit LabelSelector(std::vector<LabelRequirement> requirements);

  // The string syntax of `kubectl -l` and `?labelSelector=`: `a=b`, `a==b`, `a!=b`,
  // `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, joined by commas. Bad syntax or an
  // invalid key/value → InvalidArgument naming the position, e.g.
  //   unable to parse label selector "a in (x": expected ')' or ',' at column 8
  static Result<LabelSelector> Parse(std::string_view text);

  // From metav1.LabelSelector parts: matchLabels and matchExpressions (operators In, NotIn,
  // Exists, DoesNotExist). Errors name `path` (e.g. "spec.selector.matchExpressions[0].values").
  struct Expression {
    std::string key;
    std::string op;
    std::vector<std::string> values;
  };
  static Result<LabelSelector> FromParts(const std::map<std::string, std::string>& match_labels,
                                         const std::vector<Expression>& match_expressions,
                                         std::string_view path);

  bool Matches(const std::map<std::string, std::string>& labels) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<LabelRequirement>& requirements() const { return requirements_; }

  // Canonical string form (parses back to an equal selector).
  std::string ToString() const;

  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;

 private:
  std::vector<LabelRequirement> requirements_;  // sorted by key
};

}  // namespace warren::api
