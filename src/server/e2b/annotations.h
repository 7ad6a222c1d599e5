#pragma once

// Keys the E2B layer writes on the Sandbox objects it creates. Warren's own keys live under
// e2b.warren.dev/ so they never collide with system keys (agents.kruise.io/) or with the
// OpenKruise metadata extensions (e2b.agents.kruise.io/).

namespace warren::server::e2b {

// The user's E2B metadata as one JSON object of strings: E2B keys may be any string ("my key"),
// which annotation keys cannot be, so the map is kept whole and returned unchanged.
inline constexpr const char* kMetadataAnnotation = "e2b.warren.dev/metadata";
// The templateID the create named (a SandboxTemplate or SandboxSet name): alias and templateID
// in responses, and the list's `template` filter.
inline constexpr const char* kTemplateIdAnnotation = "e2b.warren.dev/template-id";
// When the sandbox was created, with nanoseconds (creationTimestamp has whole seconds only):
// startedAt, the list order and the pagination cursor.
inline constexpr const char* kStartedAtAnnotation = "e2b.warren.dev/started-at";
// "true": the timeout pauses instead of killing (the timer is spec.pauseTime, not shutdownTime).
inline constexpr const char* kAutoPauseAnnotation = "e2b.warren.dev/auto-pause";
// "true": traffic resumes a paused sandbox (read by the gateway; same key as
// gateway::kAutoResumeAnnotation).
inline constexpr const char* kAutoResumeAnnotation = "warren.dev/auto-resume";

// "true": paused by its idle policy (spec.pauseStrategy.idleSeconds), so traffic wakes it and
// the wake leaves its timers as they were.
inline constexpr const char* kIdlePausedAnnotation = "warren.dev/idle-paused";

// E2B network.maskRequestHost: the Host header the gateway sends to the sandbox's ports instead
// of the client's ("${PORT}" becomes the port). Read by the gateway (same key as
// gateway::kMaskRequestHostAnnotation).
inline constexpr const char* kMaskRequestHostAnnotation = "warren.dev/mask-request-host";

// The default user processes run as, sent to envd with /init (E2B templates have `user`).
inline constexpr const char* kDefaultUser = "user";

}  // namespace warren::server::e2b
