#pragma once

#include <chrono>
#include <string>

namespace warren::api {

// Formats a duration the way Go's time.Duration.String() does, which is how Kubernetes
// serialises metav1.Duration fields: "0s", "500ms", "30s", "1m0s", "1h30m0s", "1.5s".
std::string FormatGoDuration(std::chrono::nanoseconds d);

}  // namespace warren::api
