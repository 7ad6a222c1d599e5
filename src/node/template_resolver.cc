#include "node/template_resolver.h"

#include <fmt/format.h>

#include <utility>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "api/types/sandbox_template.h"
#include "node/reasons.h"

namespace warren::node {
namespace {

TemplateOutcome Fail(std::string reason, std::string message, bool terminal = true) {
  TemplateOutcome out;
  out.failure = Failure{std::move(reason), std::move(message), terminal};
  return out;
}

// spec.template.spec.restartPolicy, read from the document (const-safe: absent fields are "").
std::string RestartPolicyOf(const api::Json& spec_json) {
  if (!spec_json.is_object()) return "";
  auto pod_template = spec_json.find("template");
  if (pod_template == spec_json.end() || !pod_template->is_object()) return "";
  auto spec = pod_template->find("spec");
  if (spec == pod_template->end() || !spec->is_object()) return "";
  auto rp = spec->find("restartPolicy");
  if (rp == spec->end() || !rp->is_string()) return "";
  return rp->get<std::string>();
}

}  // namespace

TemplateOutcome ResolveTemplate(store::Store& store, const api::Object& sandbox) {
  auto spec = api::DecodeSpec<api::SandboxSpec>(sandbox);
  if (!spec.ok()) return Fail(reasons::kInvalidTemplate, spec.status().message());
  const api::Json& raw_spec = sandbox.spec();
  if (spec->pod_template) {
    TemplateOutcome out;
    out.resolved = ResolvedTemplate{*spec->pod_template, RestartPolicyOf(raw_spec), "inline",
                                    spec->volume_claim_templates};
    return out;
  }
  if (!spec->template_ref || spec->template_ref->name.empty()) {
    return Fail(reasons::kInvalidTemplate, "spec has neither template nor templateRef");
  }
  const std::string& name = spec->template_ref->name;
  auto tmpl = store.Get(api::SandboxTemplateKind(), sandbox.metadata.namespace_, name);
  if (!tmpl.ok()) {
    if (tmpl.status().code() == StatusCode::kNotFound) {
      return Fail(reasons::kTemplateNotFound,
                  fmt::format("SandboxTemplate \"{}\" not found in namespace \"{}\"", name,
                              sandbox.metadata.namespace_),
                  /*terminal=*/false);
    }
    return Fail(reasons::kTemplateNotFound,
                fmt::format("reading SandboxTemplate \"{}\": {}", name, tmpl.status().message()),
                /*terminal=*/false);
  }
  auto tspec = api::DecodeSpec<api::SandboxTemplateSpec>(*tmpl);
  if (!tspec.ok() || !tspec->pod_template) {
    return Fail(reasons::kInvalidTemplate,
                fmt::format("SandboxTemplate \"{}\" has no usable template: {}", name,
                            tspec.ok() ? "spec.template is missing" : tspec.status().message()));
  }
  TemplateOutcome out;
  out.resolved = ResolvedTemplate{
      *tspec->pod_template, RestartPolicyOf(std::as_const(*tmpl).spec()), "SandboxTemplate/" + name,
      spec->volume_claim_templates.empty() ? tspec->volume_claim_templates
                                           : spec->volume_claim_templates};
  return out;
}

}  // namespace warren::node
