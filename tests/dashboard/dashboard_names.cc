#include "dashboard_names.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "api/json.h"
#include "base/status.h"

namespace warren::dashboard_testing {
namespace {

bool IdentChar(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

std::string FamilyOf(std::string name) {
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      return name.substr(0, name.size() - suffix.size());
    }
  }
  return name;
}

void Collect(const api::Json& node, const char* key, std::vector<std::string>& out) {
  if (node.is_object()) {
    for (const auto& [k, v] : node.items()) {
      if (k == key && v.is_string()) out.push_back(v.get<std::string>());
      Collect(v, key, out);
    }
  } else if (node.is_array()) {
    for (const auto& v : node) Collect(v, key, out);
  }
}

}  // namespace

std::string DashboardPath() { return WARREN_SOURCE_DIR "/deploy/grafana/warren-dashboard.json"; }

std::set<std::string> MetricNamesIn(std::string_view expr) {
  std::set<std::string> names;
  int braces = 0;  // inside {...} every identifier is a label
  for (size_t i = 0; i < expr.size();) {
    char c = expr[i];
    if (c == '"') {  // skip strings (label values, legend text)
      size_t end = expr.find('"', i + 1);
      i = end == std::string_view::npos ? expr.size() : end + 1;
      continue;
    }
    if (c == '{') ++braces;
    if (c == '}') --braces;
    if (!IdentChar(c, true) || braces > 0) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < expr.size() && IdentChar(expr[i], false)) ++i;
    std::string ident(expr.substr(start, i - start));
    size_t next = i;
    while (next < expr.size() && expr[next] == ' ') ++next;
    char after = next < expr.size() ? expr[next] : '\0';
    size_t prev = start;
    while (prev > 0 && expr[prev - 1] == ' ') --prev;
    char before = prev > 0 ? expr[prev - 1] : '\0';
    // `by (le)` lists labels; a name alone in a call is a metric: `sum(x)`, `label_values(x, l)`.
    bool in_by = expr.substr(0, prev).ends_with("by (") || expr.substr(0, prev).ends_with("by(");
    bool selector = after == '{' || after == '[';
    bool alone = before == '(' && (after == ')' || after == ',') && !in_by;
    if (selector || alone) names.insert(FamilyOf(ident));
  }
  return names;
}

Result<std::set<std::string>> DashboardMetricNames(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFoundError("cannot read " + path);
  std::stringstream text;
  text << f.rdbuf();
  ASSIGN_OR_RETURN(api::Json doc, api::ParseJson(text.str()));
  std::vector<std::string> exprs;
  Collect(doc["panels"], "expr", exprs);
  Collect(doc["templating"], "definition", exprs);
  if (exprs.empty()) return InvalidArgumentError("no expressions in " + path);
  std::set<std::string> names;
  for (const std::string& e : exprs) {
    std::set<std::string> in = MetricNamesIn(e);
    if (in.empty()) return InvalidArgumentError(fmt::format("no metric name in \"{}\"", e));
    names.insert(in.begin(), in.end());
  }
  return names;
}

}  // namespace warren::dashboard_testing
