#include "server/e2b/templates.h"

#include <fmt/format.h>

#include <set>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox_set.h"
#include "api/types/sandbox_template.h"
#include "api/validation.h"
#include "base/log.h"

namespace warren::server::e2b {
namespace {

using api::Json;

constexpr const char* kSpecParts[] = {"template", "persistentContents", "runtimes",
                                      "pauseStrategy"};

Json SpecParts(const api::Object& o) {
  Json parts = Json::object();
  const Json& spec = o.spec();
  if (!spec.is_object()) return parts;
  for (const char* key : kSpecParts) {
    if (auto it = spec.find(key); it != spec.end() && !it->is_null()) parts[key] = *it;
  }
  return parts;
}

// NotFound passes through as "not there"; any other store error is returned.
Result<std::optional<api::Object>> Find(store::Store& store, const api::KindInfo& kind,
                                        std::string_view ns, std::string_view name) {
  auto got = store.Get(kind, ns, name);
  if (got.ok()) return std::optional<api::Object>(std::move(*got));
  if (got.status().code() == StatusCode::kNotFound) return std::optional<api::Object>();
  return got.status();
}

Result<std::optional<ResolvedTemplate>> ResolveIn(store::Store& store, std::string_view ns,
                                                  std::string_view name) {
  ASSIGN_OR_RETURN(auto set, Find(store, api::SandboxSetKind(), ns, name));
  if (set) {
    ResolvedTemplate t{.name = std::string(name),
                       .namespace_ = std::string(ns),
                       .kind = ResolvedTemplate::Kind::kSandboxSet};
    t.spec_parts = SpecParts(*set);
    if (!t.spec_parts.contains("template")) {
      ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::SandboxSetSpec>(*set));
      if (!spec.template_ref || spec.template_ref->name.empty()) {
        return InvalidArgumentError(
            fmt::format("template \"{}\": SandboxSet {}/{} has neither template nor templateRef",
                        name, ns, name));
      }
      ASSIGN_OR_RETURN(auto ref,
                       Find(store, api::SandboxTemplateKind(), ns, spec.template_ref->name));
      if (!ref) {
        return InvalidArgumentError(
            fmt::format("template \"{}\": SandboxSet {}/{} refers to SandboxTemplate \"{}\", which "
                        "is not found",
                        name, ns, name, spec.template_ref->name));
      }
      Json parts = SpecParts(*ref);
      for (auto& [k, v] : parts.items()) {
        if (!t.spec_parts.contains(k)) t.spec_parts[k] = v;
      }
    }
    return std::optional<ResolvedTemplate>(std::move(t));
  }
  ASSIGN_OR_RETURN(auto tpl, Find(store, api::SandboxTemplateKind(), ns, name));
  if (tpl && !tpl->metadata.deletion_timestamp) {
    ResolvedTemplate t{.name = std::string(name),
                       .namespace_ = std::string(ns),
                       .kind = ResolvedTemplate::Kind::kSandboxTemplate};
    t.spec_parts = SpecParts(*tpl);
    if (auto r = tpl->metadata.annotations.find(api::annotations::kRestoreFrom);
        r != tpl->metadata.annotations.end()) {
      t.restore_from = r->second;
    }
    if (!t.spec_parts.contains("template")) {
      return InvalidArgumentError(
          fmt::format("template \"{}\": SandboxTemplate {}/{} has no template", name, ns, name));
    }
    return std::optional<ResolvedTemplate>(std::move(t));
  }
  return std::optional<ResolvedTemplate>();
}

// Resources of a pod template's main container, for the Template response.
void FillResources(const Json& pod_template, TemplateInfo& info) {
  auto decoded = api::DecodeTyped<api::PodTemplateSpec>(pod_template, "template");
  if (!decoded.ok() || decoded->spec.containers.empty()) return;
  const auto& res = decoded->spec.containers[0].resources;
  auto pick = [&](const char* name) -> const api::Quantity* {
    if (auto it = res.limits.find(name); it != res.limits.end()) return &it->second;
    if (auto it = res.requests.find(name); it != res.requests.end()) return &it->second;
    return nullptr;
  };
  if (const auto* cpu = pick("cpu")) info.cpu_count = static_cast<int32_t>(cpu->Value());
  if (const auto* mem = pick("memory")) info.memory_mb = mem->Value() / (1024 * 1024);
  if (const auto* disk = pick("ephemeral-storage")) info.disk_mb = disk->Value() / (1024 * 1024);
}

}  // namespace

Result<ResolvedTemplate> ResolveTemplate(store::Store& store, std::string_view namespace_,
                                         std::string_view template_id,
                                         std::string_view shared_namespace) {
  if (auto err = api::CheckDns1123Subdomain(template_id)) {
    return InvalidArgumentError(
        fmt::format("template \"{}\" is not a valid template name: {}", template_id, *err));
  }
  ASSIGN_OR_RETURN(auto found, ResolveIn(store, namespace_, template_id));
  if (!found && shared_namespace != namespace_) {
    ASSIGN_OR_RETURN(found, ResolveIn(store, shared_namespace, template_id));
  }
  if (!found) {
    return InvalidArgumentError(fmt::format(
        "template \"{}\" not found: no SandboxSet or SandboxTemplate of that name in namespace "
        "\"{}\"{}",
        template_id, namespace_,
        shared_namespace != namespace_ ? fmt::format(" or \"{}\"", shared_namespace) : ""));
  }
  return std::move(*found);
}

Status EnsureTemplate(store::Store& store, std::string_view namespace_, std::string_view name,
                      std::string_view image, std::string_view working_dir) {
  ASSIGN_OR_RETURN(auto existing, Find(store, api::SandboxTemplateKind(), namespace_, name));
  if (existing) return Status::Ok();
  api::Object t;
  t.api_version = "agents.kruise.io/v1alpha1";
  t.kind = "SandboxTemplate";
  t.metadata.name = std::string(name);
  t.metadata.namespace_ = std::string(namespace_);
  t.metadata.labels["app.kubernetes.io/managed-by"] = "warren";
  Json container = {{"name", "main"}, {"image", std::string(image)}};
  if (!working_dir.empty()) container["workingDir"] = std::string(working_dir);
  t.spec()["template"] = {{"spec", {{"containers", Json::array({std::move(container)})}}}};
  auto created = store.Create(std::move(t));
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    return created.status().WithPrefix(
        fmt::format("create SandboxTemplate {}/{}", namespace_, name));
  }
  if (created.ok()) {
    base::Logger("e2b")->info("template created namespace={} name={} image={}", namespace_, name,
                              image);
  }
  return Status::Ok();
}

Result<std::vector<TemplateInfo>> ListTemplates(store::Store& store, std::string_view namespace_,
                                                bool all_namespaces,
                                                std::string_view shared_namespace) {
  std::vector<TemplateInfo> out;
  std::set<std::string> seen;
  std::vector<std::string> namespaces;
  if (all_namespaces) {
    namespaces.push_back("");
  } else {
    namespaces.push_back(std::string(namespace_));
    if (shared_namespace != namespace_) namespaces.push_back(std::string(shared_namespace));
  }
  for (const std::string& ns : namespaces) {
    for (const api::KindInfo* kind : {&api::SandboxSetKind(), &api::SandboxTemplateKind()}) {
      store::ListOptions options;
      options.namespace_ = ns;
      ASSIGN_OR_RETURN(auto list, store.List(*kind, options));
      for (const auto& o : list.items) {
        // The caller's own namespace shadows the shared one, as in ResolveTemplate.
        if (!seen.insert(o.metadata.name).second) continue;
        TemplateInfo info;
        info.name = o.metadata.name;
        info.kind = o.kind;
        if (o.metadata.creation_timestamp) info.created_at = *o.metadata.creation_timestamp;
        const Json& spec = o.spec();
        if (spec.is_object() && spec.contains("template")) FillResources(spec["template"], info);
        out.push_back(std::move(info));
      }
    }
  }
  return out;
}

}  // namespace warren::server::e2b
