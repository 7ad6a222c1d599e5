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
  kClosed,   // an unclaimed warm-pool member: every request is 401, on every port (nobody
             // outside the control plane holds a token for it before a claim hands it out)
};
std::string_view RouteStateName(RouteState state);  // "running", "paused", "gone", "closed"

// What the gateway knows about one sandbox. Value type.
struct Route {
  std::string sandbox_id;  // the E2B-style id (label agents.kruise.io/sandbox-id)
  std::string namespace_;
  std::string name;
  std::string uid;
  RouteState state = RouteState::kGone;
  // envd's access token (sealed on the object, api/sandbox_secrets.h); empty = none, and then
  // envd traffic is open (an E2B v1 create with secure:false).
  std::string access_token;
  // The token every other port asks for (e2b-traffic-access-token) when the sandbox is not
  // public (E2B allowPublicTraffic: false); empty = public.
  std::string traffic_token;
  // The Host header sent to the sandbox's ports instead of the client's ("${PORT}" → the port;
  // E2B maskRequestHost); empty = the client's.
  std::string mask_request_host;
  // The store revision this route reflects. An update applies only when it is newer; 0 means
  // "unknown" (a direct update from a path that did not write the object) and always applies.
  int64_t resource_version = 0;
  // A paused sandbox is resumed by traffic (E2B autoResume) instead of answering 502.
  bool auto_resume = false;
  // spec.pauseStrategy.idleSeconds: a running sandbox with no relay open for this long is
  // paused (Gateway housekeeping → Resumer::PauseIdle); 0 = never.
  int64_t idle_pause_seconds = 0;
};

// For logs: every field but the token, which is only said to be set or not.
std::string DescribeRoute(const Route& route);

}  // namespace warren::gateway
