#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/json.h"
#include "base/result.h"
#include "server/e2b/responses.h"
#include "store/store.h"

namespace warren::server::e2b {

// What an E2B templateID resolves to.
struct ResolvedTemplate {
  enum class Kind { kSandboxTemplate, kSandboxSet };
  std::string name;
  std::string namespace_;  // where it was found
  Kind kind = Kind::kSandboxTemplate;
  // The parts of a Sandbox spec the template provides, as JSON: "template" (the pod template,
  // unknown fields kept), and when the template has them "persistentContents", "runtimes",
  // "pauseStrategy". A cold create copies them into the new Sandbox's spec.
  api::Json spec_parts = api::Json::object();
  // A SandboxTemplate made for a snapshot carries the Checkpoint to start from
  // (agents.kruise.io/restore-from); the create copies it onto the new Sandbox.
  std::string restore_from;
};

// Looks `template_id` up as a SandboxSet, then a SandboxTemplate, first in the caller's
// namespace, then in `shared_namespace` (where the built-in `base` lives). A SandboxSet's
// templateRef is followed to its SandboxTemplate. InvalidArgument naming the template when it
// is not a valid name or is not found (E2B answers 400 for a bad template reference).
Result<ResolvedTemplate> ResolveTemplate(store::Store& store, std::string_view namespace_,
                                         std::string_view template_id,
                                         std::string_view shared_namespace);

// Creates the SandboxTemplate `name` in `namespace_` running `image` unless one exists
// (server start: a template `base` exists out of the box). `working_dir` (may be empty) is the
// main container's workingDir: commands without a cwd start there.
Status EnsureTemplate(store::Store& store, std::string_view namespace_, std::string_view name,
                      std::string_view image, std::string_view working_dir = {});

// Every SandboxTemplate and SandboxSet a caller in `namespace_` can create from (its own and
// the shared namespace's; every namespace for an admin), by name.
Result<std::vector<TemplateInfo>> ListTemplates(store::Store& store, std::string_view namespace_,
                                                bool all_namespaces,
                                                std::string_view shared_namespace);

}  // namespace warren::server::e2b
