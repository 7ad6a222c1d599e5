#include "controller/sandboxset_revision.h"

#include <fmt/format.h>

#include "api/inplace_update.h"
#include "api/kinds.h"
#include "api/types/labels.h"

namespace warren::controller {

TemplateRevision ComputeRevision(const api::Object& set, const api::Object* referenced) {
  const api::Json& spec = set.spec();
  api::Json t = api::Json::object();
  if (referenced != nullptr) {
    const api::Json& ref_spec = referenced->spec();
    if (ref_spec.is_object() && ref_spec.contains("template")) t["template"] = ref_spec["template"];
  } else if (spec.is_object() && spec.contains("template")) {
    t["template"] = spec["template"];
  }
  for (const char* field :
       {"persistentContents", "runtimes", "pauseStrategy", "volumeClaimTemplates"}) {
    if (spec.is_object() && spec.contains(field) && !spec[field].is_null()) {
      t[field] = spec[field];
    }
  }
  TemplateRevision r;
  if (referenced != nullptr) {
    auto restore = referenced->metadata.annotations.find(api::annotations::kRestoreFrom);
    if (restore != referenced->metadata.annotations.end()) r.restore_from = restore->second;
  }
  // Keys are sorted (api::Json), so equal templates always serialise to the same text. A set
  // that restores nothing hashes as it always did (its members are not rolled by this change).
  std::string hashed = api::DumpJson(t);
  if (!r.restore_from.empty()) hashed += "\nrestore-from=" + r.restore_from;
  r.hash = fmt::format("{:08x}", api::Fnv32a(hashed));
  // A DNS subdomain is at most 253 characters; the hash keeps revisions apart.
  r.template_name = fmt::format("{}-{}", set.metadata.name.substr(0, 243), r.hash);
  r.template_spec = std::move(t);
  return r;
}

api::Object MakeRevisionTemplate(const api::Object& set, const TemplateRevision& revision) {
  api::Object o;
  o.api_version = api::kAgentsApiVersion;
  o.kind = "SandboxTemplate";
  o.metadata.namespace_ = set.metadata.namespace_;
  o.metadata.name = revision.template_name;
  o.metadata.labels[api::labels::kSandboxPool] = set.metadata.name;
  o.metadata.labels[api::labels::kTemplateHash] = revision.hash;
  o.metadata.owner_references.push_back(set.MakeControllerRef());
  if (!revision.restore_from.empty()) {
    o.metadata.annotations[api::annotations::kRestoreFrom] = revision.restore_from;
  }
  o.body["spec"] = revision.template_spec;
  return o;
}

}  // namespace warren::controller
