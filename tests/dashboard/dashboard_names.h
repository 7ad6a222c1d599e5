#pragma once

#include <set>
#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::dashboard_testing {

// deploy/grafana/warren-dashboard.json in this source tree.
std::string DashboardPath();

// The metric names a PromQL expression reads: identifiers written before a selector (`{`) or a
// range (`[`), or alone inside a call (`sum(sandbox_routes)`, `label_values(name, label)`),
// with a histogram's _bucket/_sum/_count suffix removed so they name the family.
std::set<std::string> MetricNamesIn(std::string_view expr);

// Every metric name the dashboard's panels (targets[].expr) and template variables read.
// InvalidArgument when the file is not JSON or an expression names no metric.
Result<std::set<std::string>> DashboardMetricNames(const std::string& path);

}  // namespace warren::dashboard_testing
