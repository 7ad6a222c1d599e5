#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "server/e2b/requests.h"
#include "server/e2b/responses.h"

namespace warren::server::e2b {

// Settings of the E2B-compatible API. Defaults follow E2B where it documents them.
struct E2bOptions {
  TimeoutRules v2_timeouts{.default_seconds = 300, .max_seconds = 86400};
  int64_t v1_default_timeout_seconds = 15;  // POST /sandboxes without a timeout (E2B's v1 spec)
  // How long a create (or connect-resume) waits for the sandbox to be Running and Ready.
  std::chrono::milliseconds ready_timeout{60000};
  // How long a pause waits for the node to report Paused.
  std::chrono::milliseconds pause_timeout{30000};
  // How long envd's /init may take (dialing included).
  std::chrono::milliseconds init_timeout{10000};
  // Where shared templates live (the built-in `base`, and the admin key's sandboxes).
  std::string shared_namespace = "default";
  std::string base_template = "base";
  std::string base_image = "base";
  // E2B's base template works in the default user's home (its image says WORKDIR /home/user);
  // our `base` image keeps `/`, so the template says it.
  std::string base_workdir = "/home/user";
  // Largest request body the E2B routes accept (larger → 413).
  size_t max_body_bytes = 1u << 20;
  ResponseContext response;
};

}  // namespace warren::server::e2b
