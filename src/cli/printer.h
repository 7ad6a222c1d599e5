#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "api/json.h"
#include "api/kinds.h"
#include "base/clock.h"

namespace warren::cli {

// kubectl's human-readable ages: "45s", "5m3s", "12m", "3h20m", "2d", "3y120d".
std::string HumanAge(std::chrono::seconds age);

// "[####......]": how far `done` of `total` is, in ten cells (a total of 0 is complete), for
// the lines the waiting verbs print (`scale -w`, `set image -w`) and `get`'s percent columns.
std::string ProgressBar(int64_t done, int64_t total);

// "sandboxset.agents.kruise.io/pool", as `-o name` and multi-kind tables print objects.
std::string QualifiedName(const api::KindInfo& kind, std::string_view name);

// Aligned columns like kubectl: each column as wide as its widest cell plus three spaces.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void Print(std::ostream& out, bool with_header = true) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

struct TableOptions {
  bool wide = false;
  bool with_namespace = false;   // -A
  bool qualified_names = false;  // several kinds in one listing
};

std::vector<std::string> TableHeader(const api::KindInfo& kind, const TableOptions& options);
std::vector<std::string> TableRow(const api::KindInfo& kind, const api::Json& object,
                                  const TableOptions& options, base::WallTime now);

// `warren describe`: the object's metadata, spec and status as indented "Key:  value" lines
// (camelCase keys shown as Title Case), the conditions as a table, then `events` (an EventList
// of warren.dev Events about the object).
std::string Describe(const api::KindInfo& kind, const api::Json& object, const api::Json& events,
                     base::WallTime now);

}  // namespace warren::cli
