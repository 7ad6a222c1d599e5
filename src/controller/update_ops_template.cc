#include "controller/update_ops_template.h"

#include <fmt/format.h>

#include "api/inplace_update.h"
#include "api/strategic_merge.h"
#include "api/typed_codec.h"
#include "api/types/pod_template.h"

namespace warren::controller {
namespace {

Result<std::string> RevisionOf(const api::Json& pod_template, std::string_view what) {
  auto typed = api::DecodeTyped<api::PodTemplateSpec>(pod_template, "template");
  if (!typed.ok()) {
    return InvalidArgumentError(fmt::format("{}: {}", what, typed.status().message()));
  }
  return api::PodTemplateHash(*typed);
}

}  // namespace

Result<UpdateTarget> ResolveUpdateTarget(const api::Object& sandbox, const api::Json& patch,
                                         const TemplateLookup& lookup) {
  UpdateTarget out;
  api::Json current;
  const api::Json& spec = sandbox.spec();
  if (spec.is_object() && spec.contains("template") && spec.at("template").is_object()) {
    current = spec.at("template");
  } else {
    const api::Json* ref =
        spec.is_object() && spec.contains("templateRef") ? &spec.at("templateRef") : nullptr;
    std::string name = ref != nullptr && ref->is_object() ? ref->value("name", "") : "";
    if (name.empty()) {
      return FailedPreconditionError(fmt::format(
          "sandbox \"{}\" has neither spec.template nor spec.templateRef", sandbox.metadata.name));
    }
    auto tmpl = lookup(sandbox.metadata.namespace_, name);
    if (tmpl == nullptr) {
      return FailedPreconditionError(
          fmt::format("sandbox \"{}\": SandboxTemplate \"{}\" not found in namespace \"{}\"",
                      sandbox.metadata.name, name, sandbox.metadata.namespace_));
    }
    const api::Json& tspec = tmpl->spec();
    if (!tspec.is_object() || !tspec.contains("template") || !tspec.at("template").is_object()) {
      return FailedPreconditionError(
          fmt::format("sandbox \"{}\": SandboxTemplate \"{}\" has no spec.template",
                      sandbox.metadata.name, name));
    }
    current = tspec.at("template");
    out.from_template_ref = true;
    bool own_claims =
        spec.contains("volumeClaimTemplates") && !spec.at("volumeClaimTemplates").empty();
    if (!own_claims && tspec.contains("volumeClaimTemplates")) {
      out.volume_claim_templates = tspec.at("volumeClaimTemplates");
    }
  }
  ASSIGN_OR_RETURN(out.current_revision,
                   RevisionOf(current, fmt::format("sandbox \"{}\"", sandbox.metadata.name)));
  out.patched = current;
  Status patched = api::ApplyPodTemplateStrategicMerge(out.patched, patch);
  if (!patched.ok()) return patched.WithPrefix("spec.patch");
  ASSIGN_OR_RETURN(out.target_revision,
                   RevisionOf(out.patched, fmt::format("sandbox \"{}\" patched by spec.patch",
                                                       sandbox.metadata.name)));
  return out;
}

}  // namespace warren::controller
