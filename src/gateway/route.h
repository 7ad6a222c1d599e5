#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace warren::gateway {

// Whether traffic for a sandbox may be relayed.
enum class RouteState {
  kRunning,  // relay
  kPaused,   // 502 "not found" (E2B's answer for a paused sandbox), or auto-resume
  kGone,     // not routable: pending, failed, finished, being deleted or recycled
};
std::string_view RouteStateName(RouteState state);  // "running", "paused", "gone"

// What the gateway knows about one sandbox. Value type.
struct Route {
  std::string sandbox_id;  // the E2B-style id (label agents.kruise.io/sandbox-id)
  std::string namespace_;
  std::string name;
  std::string uid;
  RouteState state = RouteState::kGone;
  // envd's access token (annotation agents.kruise.io/runtime-access-token); empty = none, and
  // then envd traffic is open.
  std::string access_token;
  // The store revision this route reflects. An update applies only when it is newer; 0 means
  // "unknown" (a direct update from a path that did not write the object) and always applies.
  int64_t resource_version = 0;
  // A paused sandbox is resumed by traffic (E2B autoResume) instead of answering 502.
  bool auto_resume = false;
};

// For logs: every field but the token, which is only said to be set or not.
std::string DescribeRoute(const Route& route);

}  // namespace warren::gateway
