#include "envd/envd_state.h"

#include "base/ids.h"
#include "base/log.h"
#include "envd/init_channel.h"
#include "envd/proto_json.h"

namespace warren::envd {

Result<InitRequest> ParseInitRequest(std::string_view body) {
  ASSIGN_OR_RETURN(pj::Json j, pj::ParseObject(body));
  InitRequest r;
  if (pj::Find(j, "envVars", "env_vars")) {
    ASSIGN_OR_RETURN(auto envs, pj::StringMap(j, "envVars", "env_vars"));
    r.env_vars = std::move(envs);
  }
  ASSIGN_OR_RETURN(r.access_token, pj::String(j, "accessToken", "access_token"));
  ASSIGN_OR_RETURN(r.default_user, pj::String(j, "defaultUser", "default_user"));
  ASSIGN_OR_RETURN(r.default_workdir, pj::String(j, "defaultWorkdir", "default_workdir"));
  ASSIGN_OR_RETURN(r.reset_secret, pj::String(j, "resetSecret", "reset_secret"));
  return r;
}

namespace {

// Merges env vars (a later value for a key wins) and replaces whatever else is set.
void Apply(const InitRequest& init, bool by_node, EnvdDefaults& current) {
  if (init.env_vars) {
    for (const auto& [k, v] : *init.env_vars) current.env_vars[k] = v;
  }
  if (init.access_token) {
    if (init.access_token->empty()) {
      current.access_token.reset();
    } else {
      current.access_token = *init.access_token;
    }
  }
  if (init.default_user && !init.default_user->empty()) current.default_user = *init.default_user;
  if (init.default_workdir) {
    if (init.default_workdir->empty()) {
      current.default_workdir.reset();
    } else {
      current.default_workdir = *init.default_workdir;
    }
  }
  // The reset secret can be set once, or replaced by its holder; a command-line secret wins
  // over anyone else.
  if (init.reset_secret && !init.reset_secret->empty() && (!current.reset_secret || by_node)) {
    current.reset_secret = *init.reset_secret;
  }
}

}  // namespace

EnvdState::EnvdState(EnvdDefaults defaults) : defaults_(defaults), current_(std::move(defaults)) {}
EnvdState::~EnvdState() = default;

void EnvdState::FollowInitChannel(std::unique_ptr<InitChannelReader> channel,
                                  UserCheck user_exists) {
  std::lock_guard lock(mu_);
  channel_ = std::move(channel);
  user_exists_ = std::move(user_exists);
  CatchUpLocked();
}

void EnvdState::CatchUpLocked() const {
  if (!channel_ || !channel_->Changed()) return;
  auto taken = channel_->Take();
  if (!taken.ok()) {
    base::Logger("envd")->error("init channel: {}; closed until the node writes a body that parses",
                                taken.status().ToString());
    current_.access_token = base::RandomHex(32);
    return;
  }
  if (!*taken) return;
  InitRequest& init = **taken;
  if (init.default_user && !init.default_user->empty() && user_exists_) {
    if (Status s = user_exists_(*init.default_user); !s.ok()) {
      base::Logger("envd")->error("init channel: defaultUser '{}' left out: {}", *init.default_user,
                                  s.message());
      init.default_user.reset();
    }
  }
  Apply(init, /*by_node=*/true, current_);
}

void EnvdState::ApplyInit(const InitRequest& init, bool by_node) {
  std::lock_guard lock(mu_);
  CatchUpLocked();  // an older body from the channel must not land over this one later
  Apply(init, by_node, current_);
}

void EnvdState::Reset() {
  std::lock_guard lock(mu_);
  CatchUpLocked();  // taken now, so it is not taken over the defaults afterwards
  auto secret = current_.reset_secret;
  current_ = defaults_;
  // The node agent keeps its secret across recycling (it is the agent's, not the tenant's).
  current_.reset_secret = secret;
}

std::optional<std::string> EnvdState::access_token() const {
  std::lock_guard lock(mu_);
  CatchUpLocked();
  return current_.access_token;
}
std::map<std::string, std::string> EnvdState::env_vars() const {
  std::lock_guard lock(mu_);
  CatchUpLocked();
  return current_.env_vars;
}
std::string EnvdState::default_user() const {
  std::lock_guard lock(mu_);
  CatchUpLocked();
  return current_.default_user;
}
std::optional<std::string> EnvdState::default_workdir() const {
  std::lock_guard lock(mu_);
  CatchUpLocked();
  return current_.default_workdir;
}
std::optional<std::string> EnvdState::reset_secret() const {
  std::lock_guard lock(mu_);
  CatchUpLocked();
  return current_.reset_secret;
}

}  // namespace warren::envd
