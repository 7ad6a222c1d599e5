#include "cli/printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "api/json_path.h"
#include "api/types/labels.h"
#include "base/strings.h"
#include "base/time_format.h"

namespace warren::cli {

std::string HumanAge(std::chrono::seconds age) {
  int64_t s = age.count();
  if (s < -1) return "<invalid>";
  if (s < 0) s = 0;
  if (s < 120) return fmt::format("{}s", s);
  int64_t m = s / 60;
  if (m < 10) return s % 60 == 0 ? fmt::format("{}m", m) : fmt::format("{}m{}s", m, s % 60);
  if (m < 180) return fmt::format("{}m", m);
  int64_t h = m / 60;
  if (h < 8) return m % 60 == 0 ? fmt::format("{}h", h) : fmt::format("{}h{}m", h, m % 60);
  if (h < 48) return fmt::format("{}h", h);
  int64_t d = h / 24;
  if (h < 24 * 8) return h % 24 == 0 ? fmt::format("{}d", d) : fmt::format("{}d{}h", d, h % 24);
  if (d < 365 * 2) return fmt::format("{}d", d);
  int64_t y = d / 365;
  if (d < 365 * 8) {
    return d % 365 == 0 ? fmt::format("{}y", y) : fmt::format("{}y{}d", y, d % 365);
  }
  return fmt::format("{}y", y);
}

std::string QualifiedName(const api::KindInfo& kind, std::string_view name) {
  return fmt::format("{}.{}/{}", kind.singular, kind.group, name);
}

void Table::Print(std::ostream& out, bool with_header) const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 3, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  if (with_header) print(header_);
  for (const auto& r : rows_) print(r);
}

namespace {

// "40" → "[####......]  40%": a progress bar in a table cell (`get -w` redraws it).
std::string PercentBar(const std::string& value) {
  auto n = base::ParseInt64(value);
  int64_t p = std::clamp<int64_t>(n.value_or(0), 0, 100);
  return fmt::format("{} {:>3}%", ProgressBar(p, 100), p);
}

}  // namespace

std::string ProgressBar(int64_t done, int64_t total) {
  int64_t cells = total <= 0 ? 10 : std::clamp<int64_t>(done, 0, total) * 10 / total;
  return fmt::format("[{}{}]", std::string(static_cast<size_t>(cells), '#'),
                     std::string(static_cast<size_t>(10 - cells), '.'));
}

std::vector<std::string> TableHeader(const api::KindInfo& kind, const TableOptions& options) {
  std::vector<std::string> h;
  if (options.with_namespace && kind.namespaced) h.push_back("NAMESPACE");
  h.push_back("NAME");
  for (const auto& c : kind.columns) {
    if (!c.wide_only || options.wide) h.push_back(c.name);
  }
  h.push_back("AGE");
  return h;
}

std::vector<std::string> TableRow(const api::KindInfo& kind, const api::Json& object,
                                  const TableOptions& options, base::WallTime now) {
  std::vector<std::string> row;
  const api::Json& meta = object.contains("metadata") ? object["metadata"] : api::Json();
  std::string name = api::JsonPathText(meta, ".name");
  if (options.with_namespace && kind.namespaced) {
    row.push_back(api::JsonPathText(meta, ".namespace"));
  }
  row.push_back(options.qualified_names ? QualifiedName(kind, name) : name);
  for (const auto& c : kind.columns) {
    if (c.wide_only && !options.wide) continue;
    std::string v = api::JsonPathText(object, c.json_path);
    if (c.type == api::PrinterColumn::Type::kPercent) v = PercentBar(v);
    if (v.empty()) v = c.type == api::PrinterColumn::Type::kInteger ? "0" : "<none>";
    row.push_back(v);
  }
  std::string age = "<unknown>";
  if (meta.is_object() && meta["creationTimestamp"].is_string()) {
    if (auto t = base::ParseRfc3339(meta["creationTimestamp"].get<std::string>())) {
      age = HumanAge(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
    }
  }
  row.push_back(age);
  return row;
}

namespace {

// "observedGeneration" → "Observed Generation", "podIP" → "Pod IP".
std::string TitleCase(std::string_view key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) {
    char c = key[i];
    bool upper = c >= 'A' && c <= 'Z';
    bool prev_lower = i > 0 && key[i - 1] >= 'a' && key[i - 1] <= 'z';
    bool next_lower = i + 1 < key.size() && key[i + 1] >= 'a' && key[i + 1] <= 'z';
    bool prev_upper = i > 0 && key[i - 1] >= 'A' && key[i - 1] <= 'Z';
    if (i > 0 && upper && (prev_lower || (prev_upper && next_lower))) out.push_back(' ');
    out.push_back(i == 0 && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
  }
  return out;
}

std::string Scalar(const api::Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "<nil>";
  return v.dump();
}

// Maps whose keys are data (label keys, resource names), shown as written.
bool IsDataMap(std::string_view key) {
  for (std::string_view k : {"labels", "annotations", "limits", "requests", "capacity",
                             "allocatable", "envVars", "matchLabels", "nodeSelector"}) {
    if (key == k) return true;
  }
  return false;
}

void DescribeValue(std::ostringstream& out, const api::Json& v, int indent);

void DescribeObject(std::ostringstream& out, const api::Json& obj, int indent,
                    bool data_keys = false) {
  auto shown = [&](const std::string& k) { return data_keys ? k : TitleCase(k); };
  size_t width = 0;
  for (const auto& [k, v] : obj.items()) {
    if (!v.is_structured()) width = std::max(width, shown(k).size());
  }
  std::string pad(static_cast<size_t>(indent), ' ');
  for (const auto& [k, v] : obj.items()) {
    std::string key = shown(k);
    if (v.is_object() && !v.empty()) {
      out << pad << key << ":\n";
      DescribeObject(out, v, indent + 2, IsDataMap(k));
    } else if (v.is_array() && !v.empty()) {
      out << pad << key << ":\n";
      DescribeValue(out, v, indent + 2);
    } else {
      std::string text = v.is_structured() ? (v.is_array() ? "<none>" : "") : Scalar(v);
      out << pad << key << ":" << std::string(width - key.size() + 2, ' ') << text << "\n";
    }
  }
}

void DescribeValue(std::ostringstream& out, const api::Json& v, int indent) {
  std::string pad(static_cast<size_t>(indent), ' ');
  if (v.is_object()) {
    DescribeObject(out, v, indent);
  } else if (v.is_array()) {
    bool scalars =
        std::all_of(v.begin(), v.end(), [](const auto& e) { return !e.is_structured(); });
    if (scalars) {
      for (const auto& e : v) out << pad << Scalar(e) << "\n";
    } else {
      for (const auto& e : v) DescribeValue(out, e, indent);
    }
  } else {
    out << pad << Scalar(v) << "\n";
  }
}

std::string MapLines(const api::Json& m, size_t label_width) {
  if (!m.is_object() || m.empty()) return "<none>\n";
  std::string out;
  bool first = true;
  for (const auto& [k, v] : m.items()) {
    if (!first) out += std::string(label_width, ' ');
    out += fmt::format("{}={}\n", k, Scalar(v));
    first = false;
  }
  return out;
}

}  // namespace

std::string Describe(const api::KindInfo& kind, const api::Json& object, const api::Json& events,
                     base::WallTime now) {
  std::ostringstream out;
  api::Json meta = object.is_object() && object["metadata"].is_object() ? object["metadata"]
                                                                        : api::Json::object();
  constexpr size_t kLabel = 14;
  auto line = [&](std::string_view label, std::string_view value) {
    out << fmt::format("{:<{}}{}\n", std::string(label) + ":", kLabel, value);
  };
  line("Name", api::JsonPathText(meta, ".name"));
  if (kind.namespaced) line("Namespace", api::JsonPathText(meta, ".namespace"));
  out << fmt::format("{:<{}}", "Labels:", kLabel) << MapLines(meta["labels"], kLabel);
  api::Json annotations = meta["annotations"];
  if (annotations.is_object()) annotations.erase(api::annotations::kLastApplied);
  out << fmt::format("{:<{}}", "Annotations:", kLabel) << MapLines(annotations, kLabel);
  line("API Version", api::JsonPathText(object, ".apiVersion"));
  line("Kind", api::JsonPathText(object, ".kind"));
  api::Json m = meta;
  for (const char* k : {"name", "namespace", "labels", "annotations"}) m.erase(k);
  if (!m.empty()) {
    out << "Metadata:\n";
    DescribeObject(out, m, 2);
  }
  for (const auto& [k, v] : object.items()) {
    if (k == "apiVersion" || k == "kind" || k == "metadata") continue;
    if (v.is_object()) {
      api::Json shown = v;
      if (k == "status") shown.erase("conditions");
      out << TitleCase(k) << ":\n";
      if (!shown.empty()) DescribeObject(out, shown, 2);
    } else {
      out << TitleCase(k) << ":  " << (v.is_structured() ? api::DumpJson(v) : Scalar(v)) << "\n";
    }
  }
  const api::Json* conditions = api::FindJsonPath(object, ".status.conditions");
  if (conditions && conditions->is_array() && !conditions->empty()) {
    out << "Conditions:\n";
    Table t({"  Type", "Status", "Reason", "Last Transition", "Message"});
    for (const auto& c : *conditions) {
      if (!c.is_object()) continue;
      // Fields are read as text whatever their type: what a server returns is printed, never
      // trusted to be well-formed.
      auto f = [&](const char* path) { return api::JsonPathText(c, path); };
      t.AddRow(
          {"  " + f(".type"), f(".status"), f(".reason"), f(".lastTransitionTime"), f(".message")});
    }
    t.Print(out);
  }
  const api::Json* items = api::FindJsonPath(events, ".items");
  if (items == nullptr || !items->is_array() || items->empty()) {
    out << "Events:       <none>\n";
  } else {
    out << "Events:\n";
    Table t({"  Type", "Reason", "Age", "From", "Message"});
    t.AddRow({"  ----", "------", "----", "----", "-------"});
    // Oldest first, as kubectl lists them.
    std::vector<const api::Json*> sorted;
    for (const auto& e : *items) sorted.push_back(&e);
    auto when = [](const api::Json& e) {
      std::string ts = api::JsonPathText(e, ".lastTimestamp");
      return ts.empty() ? api::JsonPathText(e, ".firstTimestamp") : ts;
    };
    std::stable_sort(sorted.begin(), sorted.end(), [&](const api::Json* a, const api::Json* b) {
      return when(*a) < when(*b);  // RFC 3339 UTC timestamps sort as text
    });
    for (const api::Json* ep : sorted) {
      const api::Json& e = *ep;
      std::string age = "<unknown>";
      auto f = [&](const char* path) { return api::JsonPathText(e, path); };
      std::string ts = f(".lastTimestamp");
      if (ts.empty()) ts = f(".firstTimestamp");
      auto since = [&](const std::string& text) -> std::optional<std::string> {
        auto t0 = base::ParseRfc3339(text);
        if (!t0) return std::nullopt;
        return HumanAge(std::chrono::duration_cast<std::chrono::seconds>(now - *t0));
      };
      if (auto a = since(ts)) age = *a;
      // A repeated event: "5s (x3 over 2m)", as kubectl prints it.
      const api::Json* count = api::FindJsonPath(e, ".count");
      if (count && count->is_number_integer() && count->get<int64_t>() > 1) {
        if (auto first = since(f(".firstTimestamp"))) {
          age += fmt::format(" (x{} over {})", count->get<int64_t>(), *first);
        }
      }
      std::string from = api::JsonPathText(e, ".source.component");
      t.AddRow({"  " + f(".type"), f(".reason"), age, from, f(".message")});
    }
    t.Print(out);
  }
  return out.str();
}

}  // namespace warren::cli
