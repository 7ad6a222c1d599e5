#include "gateway/route.h"

#include <fmt/format.h>

namespace warren::gateway {

std::string_view RouteStateName(RouteState state) {
  switch (state) {
    case RouteState::kRunning:
      return "running";
    case RouteState::kPaused:
      return "paused";
    case RouteState::kGone:
      return "gone";
    case RouteState::kClosed:
      return "closed";
  }
  return "unknown";
}

std::string DescribeRoute(const Route& route) {
  return fmt::format("sandbox_id={} object={}/{} uid={} state={} rv={} token={} auto_resume={}",
                     route.sandbox_id, route.namespace_, route.name, route.uid,
                     RouteStateName(route.state), route.resource_version,
                     route.access_token.empty() ? "none" : "set", route.auto_resume);
}

}  // namespace warren::gateway
