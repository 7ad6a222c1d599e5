#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "base/result.h"

namespace warren::envd {

// What POST /init delivers (every field optional; absent fields leave the state as it is).
struct InitRequest {
  std::optional<std::map<std::string, std::string>> env_vars;
  std::optional<std::string> access_token;
  std::optional<std::string> default_user;
  std::optional<std::string> default_workdir;
  // The node agent's secret for POST /reset, when not given on the command line.
  std::optional<std::string> reset_secret;
};
Result<InitRequest> ParseInitRequest(std::string_view body);

// Defaults from the command line; Reset() returns to them.
struct EnvdDefaults {
  std::string default_user = "root";
  std::optional<std::string> default_workdir;
  std::optional<std::string> access_token;
  std::optional<std::string> reset_secret;
  std::map<std::string, std::string> env_vars;
};

// The sandbox-level settings every request consults: env vars for new processes, the access
// token, the default user and workdir. Thread-safe; readers get copies.
class EnvdState {
 public:
  explicit EnvdState(EnvdDefaults defaults);

  // Merges env vars (a later value for a key wins) and replaces whatever else is set; a new
  // access token replaces the old one, an empty one removes it. Idempotent. The reset secret
  // is set once, unless `by_node` (the caller showed the current one): a sandbox restored
  // from another's memory image is given its own by the node that restored it.
  void ApplyInit(const InitRequest& init, bool by_node = false);
  // Back to the command-line defaults (sandbox recycling).
  void Reset();

  std::optional<std::string> access_token() const;
  std::map<std::string, std::string> env_vars() const;
  std::string default_user() const;
  std::optional<std::string> default_workdir() const;
  std::optional<std::string> reset_secret() const;

 private:
  const EnvdDefaults defaults_;
  mutable std::mutex mu_;
  EnvdDefaults current_;  // guarded by mu_
};

}  // namespace warren::envd
