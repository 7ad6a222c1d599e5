#pragma once

#include <functional>
#include <map>
#include <memory>
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

class InitChannelReader;

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
  ~EnvdState();

  // Whether a user of that name exists (a defaultUser /init may name).
  using UserCheck = std::function<Status(const std::string& name)>;
  // From now on every read of the settings first takes what the node last wrote to `channel`
  // (init_channel.h), as an /init from the node (ApplyInit with by_node); the current body is
  // taken here. A body that does not parse closes envd (a token nobody holds) until the node
  // writes one that does; an unknown defaultUser in it is left out (POST /init refuses both).
  void FollowInitChannel(std::unique_ptr<InitChannelReader> channel, UserCheck user_exists);

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
  // Takes the channel's body if the node wrote since it was last taken. Const for the readers:
  // what they read is the state as the node last set it (hence the mutable members).
  void CatchUpLocked() const;

  const EnvdDefaults defaults_;
  mutable std::mutex mu_;
  mutable EnvdDefaults current_;                        // guarded by mu_
  mutable std::unique_ptr<InitChannelReader> channel_;  // guarded by mu_
  UserCheck user_exists_;
};

}  // namespace warren::envd
