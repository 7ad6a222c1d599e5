#include "envd/envd_state.h"

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

EnvdState::EnvdState(EnvdDefaults defaults) : defaults_(defaults), current_(std::move(defaults)) {}

void EnvdState::ApplyInit(const InitRequest& init, bool by_node) {
  std::lock_guard lock(mu_);
  if (init.env_vars) {
    for (const auto& [k, v] : *init.env_vars) current_.env_vars[k] = v;
  }
  if (init.access_token) {
    if (init.access_token->empty()) {
      current_.access_token.reset();
    } else {
      current_.access_token = *init.access_token;
    }
  }
  if (init.default_user && !init.default_user->empty()) current_.default_user = *init.default_user;
  if (init.default_workdir) {
    if (init.default_workdir->empty()) {
      current_.default_workdir.reset();
    } else {
      current_.default_workdir = *init.default_workdir;
    }
  }
  // The reset secret can be set once, or replaced by its holder; a command-line secret wins
  // over anyone else.
  if (init.reset_secret && !init.reset_secret->empty() && (!current_.reset_secret || by_node)) {
    current_.reset_secret = *init.reset_secret;
  }
}

void EnvdState::Reset() {
  std::lock_guard lock(mu_);
  auto secret = current_.reset_secret;
  current_ = defaults_;
  // The node agent keeps its secret across recycling (it is the agent's, not the tenant's).
  current_.reset_secret = secret;
}

std::optional<std::string> EnvdState::access_token() const {
  std::lock_guard lock(mu_);
  return current_.access_token;
}
std::map<std::string, std::string> EnvdState::env_vars() const {
  std::lock_guard lock(mu_);
  return current_.env_vars;
}
std::string EnvdState::default_user() const {
  std::lock_guard lock(mu_);
  return current_.default_user;
}
std::optional<std::string> EnvdState::default_workdir() const {
  std::lock_guard lock(mu_);
  return current_.default_workdir;
}
std::optional<std::string> EnvdState::reset_secret() const {
  std::lock_guard lock(mu_);
  return current_.reset_secret;
}

}  // namespace warren::envd
