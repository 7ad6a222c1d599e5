#include "obs/testing/exposition.h"

#include <fmt/format.h>

#include <cstdlib>

#include "base/status.h"

namespace warren::obs::testing {
namespace {

bool ValidName(std::string_view n, bool label) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (!label && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Parses `{a="x",b="y"}` at the front of `rest`, advancing it.
Status ParseLabels(std::string_view& rest, std::map<std::string, std::string>& out) {
  rest.remove_prefix(1);  // '{'
  while (!rest.empty() && rest.front() != '}') {
    size_t eq = rest.find('=');
    if (eq == std::string_view::npos || eq + 1 >= rest.size() || rest[eq + 1] != '"') {
      return InvalidArgumentError("label without =\"value\"");
    }
    std::string name(rest.substr(0, eq));
    if (!ValidName(name, true)) return InvalidArgumentError("bad label name " + name);
    rest.remove_prefix(eq + 2);
    std::string value;
    while (!rest.empty() && rest.front() != '"') {
      if (rest.front() == '\\' && rest.size() > 1) {
        char e = rest[1];
        value += e == 'n' ? '\n' : e;
        rest.remove_prefix(2);
      } else {
        value += rest.front();
        rest.remove_prefix(1);
      }
    }
    if (rest.empty()) return InvalidArgumentError("unterminated label value");
    rest.remove_prefix(1);  // '"'
    if (!out.emplace(name, value).second) return InvalidArgumentError("label twice: " + name);
    if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
  }
  if (rest.empty()) return InvalidArgumentError("unterminated label set");
  rest.remove_prefix(1);  // '}'
  return Status::Ok();
}

bool BelongsTo(std::string_view sample, std::string_view family, std::string_view type) {
  if (sample == family) return type != "histogram";
  if (type != "histogram" && type != "summary") return false;
  if (!sample.starts_with(family)) return false;
  std::string_view suffix = sample.substr(family.size());
  return suffix == "_sum" || suffix == "_count" || (type == "histogram" && suffix == "_bucket");
}

}  // namespace

Result<std::map<std::string, ExposedFamily>> ParseExposition(std::string_view text) {
  std::map<std::string, ExposedFamily> families;
  std::string current;  // the family the last TYPE line opened
  int line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    auto fail = [&](std::string_view why) {
      return InvalidArgumentError(fmt::format("line {}: {}: {}", line_no, why, line));
    };
    if (line.empty()) continue;
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const bool help = line[2] == 'H';
      std::string_view rest = line.substr(7);
      size_t sp = rest.find(' ');
      std::string name(rest.substr(0, sp));
      std::string_view arg = sp == std::string_view::npos ? "" : rest.substr(sp + 1);
      if (!ValidName(name, false)) return fail("bad metric name");
      ExposedFamily& f = families[name];
      if (!f.samples.empty()) return fail("HELP or TYPE after the family's samples");
      std::string& field = help ? f.help : f.type;
      if (!field.empty()) return fail("a second HELP or TYPE for one name");
      if (arg.empty()) return fail("empty HELP or TYPE");
      field = std::string(arg);
      if (!help) current = name;
      continue;
    }
    if (line.starts_with("#")) continue;
    size_t name_end = line.find_first_of("{ ");
    if (name_end == std::string_view::npos) return fail("sample without a value");
    ExposedSample s;
    s.name = std::string(line.substr(0, name_end));
    if (!ValidName(s.name, false)) return fail("bad sample name");
    std::string_view rest = line.substr(name_end);
    if (rest.front() == '{') {
      if (Status st = ParseLabels(rest, s.labels); !st.ok()) return fail(st.message());
    }
    if (rest.empty() || rest.front() != ' ') return fail("no value");
    std::string value(rest.substr(1, rest.find(' ', 1) - 1));
    char* end = nullptr;
    s.value = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size()) return fail("bad value");
    auto it = families.find(current);
    if (it == families.end() || !BelongsTo(s.name, current, it->second.type)) {
      return fail("sample outside its family's HELP/TYPE block");
    }
    it->second.samples.push_back(std::move(s));
  }
  for (const auto& [name, f] : families) {
    if (f.help.empty() || f.type.empty()) {
      return InvalidArgumentError(fmt::format("family {} lacks HELP or TYPE", name));
    }
  }
  return families;
}

double SumOf(const std::map<std::string, ExposedFamily>& families, std::string_view family,
             const std::map<std::string, std::string>& labels, std::string_view sample) {
  auto it = families.find(std::string(family));
  if (it == families.end()) return 0;
  double sum = 0;
  for (const ExposedSample& s : it->second.samples) {
    if (s.name != (sample.empty() ? family : sample)) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto l = s.labels.find(k);
      match = match && l != s.labels.end() && l->second == v;
    }
    if (match) sum += s.value;
  }
  return sum;
}

}  // namespace warren::obs::testing
