// Defaulting and validation of the agents.kruise.io kinds, following the upstream webhooks and
// CRD defaults (reference/openkruise-agents.md §1).

#include <fmt/format.h>

#include <set>

#include "api/admission.h"
#include "api/go_duration.h"
#include "api/label_selector.h"
#include "api/pod_template_validation.h"
#include "api/probe_validation.h"
#include "api/typed_codec.h"
#include "api/types/checkpoint.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "api/types/sandbox_claim.h"
#include "api/types/sandbox_set.h"
#include "api/types/sandbox_template.h"
#include "api/types/sandbox_update_ops.h"
#include "api/types/traffic_policy.h"
#include "api/volume_mounts.h"
#include "base/ids.h"
#include "base/time_format.h"

namespace warren::api {
namespace {

using namespace std::chrono_literals;

// Decodes the spec as T, lets `fn` default and validate it, and writes it back.
template <class T, class Fn>
Status AdmitSpec(Object& object, Fn&& fn) {
  ASSIGN_OR_RETURN(T spec, DecodeSpec<T>(object));
  FieldErrors errors;
  fn(spec, errors);
  RETURN_IF_ERROR(errors.ToStatus());
  EncodeSpec(spec, object);
  return Status::Ok();
}

// A status write must at least decode as the kind's status type.
template <class T>
Status AdmitStatusAs(Object& object) {
  return DecodeStatus<T>(object).status();
}

void ValidateOneOf(const std::vector<std::string>& values, std::string_view path,
                   const std::vector<std::string_view>& allowed, FieldErrors& errors) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::find(allowed.begin(), allowed.end(), values[i]) == allowed.end()) {
      errors.Unsupported(IndexPath(path, i), values[i], allowed);
    }
  }
}

void ValidatePauseStrategy(const std::optional<PauseStrategy>& ps, FieldErrors& errors) {
  if (!ps) return;
  if (!ps->type.empty() && ps->type != "Stop" && ps->type != "Hibernate") {
    errors.Unsupported("spec.pauseStrategy.type", ps->type, {"Stop", "Hibernate"});
  }
  if (ps->hibernate_strategy && !ps->hibernate_strategy->type.empty() &&
      ps->hibernate_strategy->type != "Snapshot") {
    errors.Unsupported("spec.pauseStrategy.hibernateStrategy.type", ps->hibernate_strategy->type,
                       {"Snapshot"});
  }
  constexpr int64_t kMaxIdleSeconds = 30 * 86400;
  if (ps->idle_seconds < 0 || ps->idle_seconds > kMaxIdleSeconds) {
    errors.Add("spec.pauseStrategy.idleSeconds",
               fmt::format("Invalid value: {}: must be between 0 and {} (30 days)",
                           ps->idle_seconds, kMaxIdleSeconds));
  }
}

void ValidateRuntimes(const std::vector<RuntimeRef>& runtimes, std::string_view path,
                      FieldErrors& errors) {
  for (size_t i = 0; i < runtimes.size(); ++i) {
    std::string p = ChildPath(IndexPath(path, i), "name");
    if (runtimes[i].name.empty()) {
      errors.Required(p);
    } else if (auto err = CheckDns1123Label(runtimes[i].name)) {
      errors.Add(p, *err);
    }
  }
}

void DefaultLifecycle(std::optional<SandboxLifecycle>& lifecycle) {
  if (!lifecycle) return;
  for (auto* action : {&lifecycle->pre_upgrade, &lifecycle->post_upgrade}) {
    if (*action && !(*action)->timeout_seconds) (*action)->timeout_seconds = 60;
  }
}

void ValidateLifecycle(const std::optional<SandboxLifecycle>& lifecycle, std::string_view path,
                       FieldErrors& errors) {
  if (!lifecycle) return;
  auto check = [&](const std::optional<UpgradeAction>& action, std::string_view name) {
    if (!action) return;
    std::string p = ChildPath(path, name);
    if (!action->exec || action->exec->command.empty()) {
      errors.Required(ChildPath(ChildPath(p, "exec"), "command"));
    }
    if (action->timeout_seconds && *action->timeout_seconds <= 0) {
      errors.Add(ChildPath(p, "timeoutSeconds"),
                 fmt::format("Invalid value: {}: must be > 0", *action->timeout_seconds));
    }
  };
  check(lifecycle->pre_upgrade, "preUpgrade");
  check(lifecycle->post_upgrade, "postUpgrade");
}

// template and templateRef are mutually exclusive and one is required.
void ValidateTemplateChoice(std::optional<PodTemplateSpec>& tmpl,
                            const std::optional<TemplateRef>& ref,
                            const std::vector<VolumeClaimTemplate>& claims, FieldErrors& errors) {
  if (tmpl && ref) {
    errors.Add("spec", "Invalid value: template and templateRef are mutually exclusive");
    return;
  }
  if (!tmpl && !ref) {
    errors.Add("spec.template", "Required value: one of template or templateRef is required");
    return;
  }
  if (ref) {
    if (ref->name.empty()) {
      errors.Required("spec.templateRef.name");
    } else if (auto err = CheckDns1123Subdomain(ref->name)) {
      errors.Add("spec.templateRef.name", *err);
    }
    if (!ref->kind.empty() && ref->kind != "SandboxTemplate") {
      errors.Unsupported("spec.templateRef.kind", ref->kind, {"SandboxTemplate"});
    }
    if (!ref->api_version.empty() && ref->api_version != kAgentsApiVersion) {
      errors.Unsupported("spec.templateRef.apiVersion", ref->api_version, {kAgentsApiVersion});
    }
    return;
  }
  DefaultPodTemplate(*tmpl);
  ValidatePodTemplate(*tmpl, "spec.template", errors, claims);
}

// Each entry names the volume a container's volumeMount refers to and asks for a size; the
// Volume made from it ("<name>-<sandbox name>") must be a valid object name too.
void ValidateVolumeClaimTemplates(const std::vector<VolumeClaimTemplate>& claims,
                                  FieldErrors& errors) {
  std::set<std::string> names;
  for (size_t i = 0; i < claims.size(); ++i) {
    const VolumeClaimTemplate& c = claims[i];
    std::string path = IndexPath("spec.volumeClaimTemplates", i);
    if (c.metadata.name.empty()) {
      errors.Required(path + ".metadata.name");
    } else if (auto err = CheckDns1123Label(c.metadata.name)) {
      errors.Add(path + ".metadata.name", *err);
    } else if (!names.insert(c.metadata.name).second) {
      errors.Add(path + ".metadata.name", fmt::format("Duplicate value: \"{}\"", c.metadata.name));
    }
    const auto& requests = c.spec.resources.requests;
    for (const auto& [key, q] : requests) {
      std::string qp = KeyPath(path + ".spec.resources.requests", key);
      if (key != "storage") {
        errors.Unsupported(qp, key, {"storage"});
      } else if (q.Value() < kMinVolumeBytes || q.Value() > kMaxVolumeBytes) {
        errors.Add(qp,
                   fmt::format("Invalid value: \"{}\": must be between 1Mi and 1Ti", q.ToString()));
      }
    }
  }
}

// What the specs of Sandbox, SandboxSet and SandboxTemplate share beside their template:
// volumeClaimTemplates, a pause strategy, persistentContents and runtimes.
template <class Spec>
void ValidateSandboxOptions(const Spec& spec, FieldErrors& errors) {
  ValidateVolumeClaimTemplates(spec.volume_claim_templates, errors);
  ValidatePauseStrategy(spec.pause_strategy, errors);
  ValidateOneOf(spec.persistent_contents, "spec.persistentContents", {"ip", "memory", "filesystem"},
                errors);
  ValidateRuntimes(spec.runtimes, "spec.runtimes", errors);
}

void ValidateMaxUnavailable(const std::optional<IntOrString>& v, std::string_view path,
                            FieldErrors& errors) {
  if (!v) return;
  if (v->is_string) {
    auto scaled = v->Scaled(100, false);
    if (!scaled.ok()) {
      errors.Add(std::string(path), scaled.status().message());
    } else if (*scaled > 100) {
      errors.Add(std::string(path),
                 fmt::format("Invalid value: \"{}\": must not be greater than 100%", v->str_value));
    }
  } else if (v->int_value < 0) {
    errors.Add(std::string(path), fmt::format("Invalid value: {}: must be >= 0", v->int_value));
  }
}

void ValidateNonNegative(std::optional<Duration>& d, std::string_view path, FieldErrors& errors,
                         std::chrono::nanoseconds min) {
  if (d && d->value < min) {
    errors.Add(std::string(path), fmt::format("Invalid value: \"{}\": must be >= {}",
                                              FormatGoDuration(d->value), FormatGoDuration(min)));
  }
}

// The E2B-style sandbox id (contracts.md): label and annotation agents.kruise.io/sandbox-id,
// defaulted on create (base::NewSandboxId) when neither carries one. It is the runtime's sandbox
// id and hostname, so it must be a DNS label.
void DefaultSandboxId(ObjectMeta& meta, FieldErrors& errors) {
  auto label = meta.labels.find(labels::kSandboxId);
  auto annotation = meta.annotations.find(annotations::kSandboxId);
  std::string id;
  if (label != meta.labels.end()) {
    id = label->second;
  } else if (annotation != meta.annotations.end()) {
    id = annotation->second;
  } else {
    id = base::NewSandboxId();
  }
  const std::string label_path = KeyPath("metadata.labels", labels::kSandboxId);
  if (auto err = CheckDns1123Label(id)) {
    errors.Add(label_path, *err);
    return;
  }
  if (annotation != meta.annotations.end() && annotation->second != id) {
    errors.Add(KeyPath("metadata.annotations", annotations::kSandboxId),
               fmt::format("Invalid value: \"{}\": must equal the label {} (\"{}\")",
                           annotation->second, labels::kSandboxId, id));
    return;
  }
  meta.labels[labels::kSandboxId] = id;
  meta.annotations[annotations::kSandboxId] = id;
}

}  // namespace

// What a sandbox mounts is decided when it is made: changing the annotation afterwards would
// say something the node never did.
Status VolumeMountsUnchanged(const Object& old_object, const Object& object) {
  auto value = [](const Object& o) {
    auto it = o.metadata.annotations.find(annotations::kVolumeMounts);
    return it == o.metadata.annotations.end() ? std::string() : it->second;
  };
  if (value(old_object) == value(object)) return Status::Ok();
  FieldErrors errors;
  errors.Add(KeyPath("metadata.annotations", annotations::kVolumeMounts),
             "Invalid value: field is immutable");
  return errors.ToStatus();
}

Status AdmitSandboxUpdate(const Object& old_object, const Object& object) {
  RETURN_IF_ERROR(VolumeMountsUnchanged(old_object, object));
  auto old_id = old_object.metadata.labels.find(labels::kSandboxId);
  if (old_id == old_object.metadata.labels.end()) return Status::Ok();
  auto new_id = object.metadata.labels.find(labels::kSandboxId);
  if (new_id == object.metadata.labels.end() || new_id->second != old_id->second) {
    FieldErrors errors;
    errors.Add(
        KeyPath("metadata.labels", labels::kSandboxId),
        fmt::format("Invalid value: \"{}\": field is immutable (was \"{}\")",
                    new_id == object.metadata.labels.end() ? "" : new_id->second, old_id->second));
    return errors.ToStatus();
  }
  return Status::Ok();
}

Status AdmitSandbox(Object& object) {
  FieldErrors id_errors;
  DefaultSandboxId(object.metadata, id_errors);
  RETURN_IF_ERROR(id_errors.ToStatus());
  RETURN_IF_ERROR(AdmitSandboxProbes(object));
  return AdmitSpec<SandboxSpec>(object, [&](SandboxSpec& spec, FieldErrors& errors) {
    if (auto mounts = VolumeMountsOf(object); !mounts.ok()) {
      errors.Add("", mounts.status().message());
    }
    for (const VolumeClaimTemplate& c : spec.volume_claim_templates) {
      // The Volume a claim gives this sandbox must be nameable.
      if (auto err = CheckDns1123Subdomain(ClaimVolumeName(c.metadata.name, object.metadata.name));
          err && !c.metadata.name.empty() && !object.metadata.name.empty()) {
        errors.Add(
            "spec.volumeClaimTemplates",
            fmt::format("Invalid value: \"{}\": the Volume \"{}\" it makes: {}", c.metadata.name,
                        ClaimVolumeName(c.metadata.name, object.metadata.name), *err));
      }
    }
    ValidateTemplateChoice(spec.pod_template, spec.template_ref, spec.volume_claim_templates,
                           errors);
    ValidateSandboxOptions(spec, errors);
    DefaultLifecycle(spec.lifecycle);
    ValidateLifecycle(spec.lifecycle, "spec.lifecycle", errors);
    if (spec.upgrade_policy && !spec.upgrade_policy->type.empty() &&
        spec.upgrade_policy->type != "Recreate" &&
        spec.upgrade_policy->type != "CheckpointRestore") {
      errors.Unsupported("spec.upgradePolicy.type", spec.upgrade_policy->type,
                         {"Recreate", "CheckpointRestore"});
    }
  });
}

Status AdmitSandboxStatus(Object& object) { return AdmitStatusAs<SandboxStatus>(object); }

Status AdmitSandboxSet(Object& object) {
  return AdmitSpec<SandboxSetSpec>(object, [&](SandboxSetSpec& spec, FieldErrors& errors) {
    if (!spec.replicas) spec.replicas = 0;
    if (*spec.replicas < 0) {
      errors.Add("spec.replicas", fmt::format("Invalid value: {}: must be >= 0", *spec.replicas));
    }
    if (!spec.update_strategy.max_unavailable) {
      spec.update_strategy.max_unavailable = IntOrString::String("20%");
    }
    ValidateMaxUnavailable(spec.update_strategy.max_unavailable,
                           "spec.updateStrategy.maxUnavailable", errors);
    ValidateMaxUnavailable(spec.scale_strategy.max_unavailable, "spec.scaleStrategy.maxUnavailable",
                           errors);
    ValidateTemplateChoice(spec.pod_template, spec.template_ref, spec.volume_claim_templates,
                           errors);
    ValidateSandboxOptions(spec, errors);
  });
}

Status AdmitSandboxSetStatus(Object& object) { return AdmitStatusAs<SandboxSetStatus>(object); }

Status AdmitSandboxClaim(Object& object) {
  return AdmitSpec<SandboxClaimSpec>(object, [&](SandboxClaimSpec& spec, FieldErrors& errors) {
    if (spec.template_name.empty()) {
      errors.Required("spec.templateName");
    } else if (auto err = CheckDns1123Subdomain(spec.template_name)) {
      errors.Add("spec.templateName", *err);
    }
    if (!spec.replicas) spec.replicas = 1;
    if (*spec.replicas < 1) {
      errors.Add("spec.replicas", fmt::format("Invalid value: {}: must be >= 1", *spec.replicas));
    }
    if (!spec.claim_timeout) spec.claim_timeout = Duration{1min};
    ValidateNonNegative(spec.claim_timeout, "spec.claimTimeout", errors, 1s);
    if (!spec.ttl_after_completed) spec.ttl_after_completed = Duration{60min};
    if (!spec.create_on_no_stock) spec.create_on_no_stock = true;
    if (!spec.wait_ready_timeout) spec.wait_ready_timeout = Duration{30s};
    ValidateNonNegative(spec.wait_ready_timeout, "spec.waitReadyTimeout", errors, 0s);
    ValidateLabels(spec.labels, "spec.labels", errors);
    ValidateAnnotations(spec.annotations, "spec.annotations", errors);
    for (const auto& [name, value] : spec.env_vars) {
      if (auto err = CheckEnvVarName(name)) errors.Add("spec.envVars", *err);
    }
    if (spec.inplace_update) {
      std::string p = "spec.inplaceUpdate.resources";
      for (const auto& [name, q] : spec.inplace_update->resources.requests) {
        if (q.MilliValue() < 0) errors.Add(KeyPath(p + ".requests", name), "must be >= 0");
      }
    }
    ValidateRuntimes(spec.runtimes, "spec.runtimes", errors);
  });
}

Status AdmitSandboxClaimUpdate(const Object& old_object, const Object& object) {
  ASSIGN_OR_RETURN(auto old_spec, DecodeSpec<SandboxClaimSpec>(old_object));
  ASSIGN_OR_RETURN(auto new_spec, DecodeSpec<SandboxClaimSpec>(object));
  FieldErrors errors;
  if (old_spec.replicas != new_spec.replicas) {
    errors.Add("spec.replicas", "Invalid value: field is immutable");
  }
  if (old_spec.template_name != new_spec.template_name) {
    errors.Add("spec.templateName", "Invalid value: field is immutable");
  }
  return errors.ToStatus();
}

Status AdmitSandboxClaimStatus(Object& object) { return AdmitStatusAs<SandboxClaimStatus>(object); }

Status AdmitSandboxTemplate(Object& object) {
  return AdmitSpec<SandboxTemplateSpec>(object, [&](SandboxTemplateSpec& spec,
                                                    FieldErrors& errors) {
    if (!spec.pod_template) {
      errors.Required("spec.template");
    } else {
      DefaultPodTemplate(*spec.pod_template);
      ValidatePodTemplate(*spec.pod_template, "spec.template", errors, spec.volume_claim_templates);
    }
    ValidateSandboxOptions(spec, errors);
  });
}

Status AdmitSandboxUpdateOps(Object& object) {
  return AdmitSpec<SandboxUpdateOpsSpec>(object, [&](SandboxUpdateOpsSpec& spec,
                                                     FieldErrors& errors) {
    if (!spec.selector) {
      errors.Required("spec.selector");
    } else {
      auto sel = ToLabelSelector(*spec.selector, "spec.selector");
      if (!sel.ok()) {
        errors.Add("", sel.status().message());
      } else if (sel->empty()) {
        errors.Add("spec.selector", "Invalid value: empty selector would select every sandbox");
      }
    }
    if (spec.update_strategy.type.empty()) spec.update_strategy.type = "Recreate";
    if (spec.update_strategy.type == "CheckpointRestore") {
      // Restoring processes needs CRIU-style checkpoints, which this kernel and runtime cannot
      // take of a native sandbox; accepting it would promise kept processes and then lose them.
      errors.Add("spec.updateStrategy.type",
                 "Unsupported value: \"CheckpointRestore\": Warren cannot restore a sandbox's "
                 "processes on this kernel; use \"Recreate\" (the writable layer and volumes are "
                 "kept, processes restart)");
    } else if (spec.update_strategy.type != "Recreate") {
      errors.Unsupported("spec.updateStrategy.type", spec.update_strategy.type,
                         {"Recreate", "CheckpointRestore"});
    }
    if (!spec.update_strategy.max_unavailable) {
      spec.update_strategy.max_unavailable = IntOrString::Int(1);
    }
    ValidateMaxUnavailable(spec.update_strategy.max_unavailable,
                           "spec.updateStrategy.maxUnavailable", errors);
    // The same shape as maxUnavailable: a count >= 0 or a percentage up to 100%.
    ValidateMaxUnavailable(spec.partition, "spec.partition", errors);
    if (!spec.patch.text.empty() && spec.patch.text.front() != '{') {
      errors.Add("spec.patch", "must be an object (a strategic-merge patch of the pod template)");
    }
    DefaultLifecycle(spec.lifecycle);
    ValidateLifecycle(spec.lifecycle, "spec.lifecycle", errors);
    if (!spec.state_filter) spec.state_filter = StateFilter{};
    if (spec.state_filter->states.empty()) spec.state_filter->states = {"Running"};
    ValidateOneOf(spec.state_filter->states, "spec.stateFilter.states", {"Running", "Paused"},
                  errors);
  });
}

// Only paused, partition and updateStrategy.maxUnavailable may change: they steer a rollout
// in flight. What it does (selector, patch, hooks, strategy type, states) is fixed at create.
Status AdmitSandboxUpdateOpsUpdate(const Object& old_object, const Object& object) {
  FieldErrors errors;
  auto field_of = [](const Json& spec, const char* field, const char* sub) {
    if (!spec.is_object() || !spec.contains(field)) return Json();
    const Json& v = spec.at(field);
    if (sub == nullptr) return v;
    return v.is_object() && v.contains(sub) ? v.at(sub) : Json();
  };
  const std::pair<const char*, const char*> kImmutable[] = {{"selector", nullptr},
                                                            {"patch", nullptr},
                                                            {"lifecycle", nullptr},
                                                            {"stateFilter", nullptr},
                                                            {"updateStrategy", "type"}};
  for (const auto& field : kImmutable) {
    if (field_of(old_object.spec(), field.first, field.second) !=
        field_of(object.spec(), field.first, field.second)) {
      std::string path = ChildPath("spec", field.first);
      if (field.second != nullptr) path = ChildPath(path, field.second);
      errors.Add(path, "Invalid value: field is immutable");
    }
  }
  return errors.ToStatus();
}

Status AdmitSandboxUpdateOpsStatus(Object& object) {
  return AdmitStatusAs<SandboxUpdateOpsStatus>(object);
}

Status AdmitCheckpoint(Object& object) {
  return AdmitSpec<CheckpointSpec>(object, [&](CheckpointSpec& spec, FieldErrors& errors) {
    if (spec.sandbox_name.empty()) {
      errors.Required("spec.sandboxName");
    } else if (auto err = CheckDns1123Subdomain(spec.sandbox_name)) {
      errors.Add("spec.sandboxName", *err);
    }
    if (!spec.keep_running) spec.keep_running = true;
    ValidateOneOf(spec.persistent_contents, "spec.persistentContents",
                  {"podInfo", "memory", "filesystem"}, errors);
    if (!spec.ttl_after_finished.empty()) {
      auto d = base::ParseDuration(spec.ttl_after_finished);
      if (!d || d->count() < 0) {
        errors.Add("spec.ttlAfterFinished",
                   fmt::format("Invalid value: \"{}\": must be a non-negative duration (e.g. "
                               "\"30s\", \"30m\", \"30d\")",
                               spec.ttl_after_finished));
      }
    }
  });
}

Status AdmitCheckpointStatus(Object& object) { return AdmitStatusAs<CheckpointStatus>(object); }

namespace {

// What a TrafficPolicy may hold: the limits upstream sets, and only what Warren enforces, so a
// policy that is accepted is one that is in force as written (nothing silently widened).
constexpr size_t kMaxTrafficRules = 50;
constexpr size_t kMaxTrafficPeers = 20;

void ValidateTrafficPeer(const TrafficPeerSpec& peer, const std::string& path, bool allow,
                         FieldErrors& errors) {
  int set = !peer.cidr.empty() + !peer.fqdn.empty() + !peer.service.text.empty() +
            !peer.workload.text.empty();
  if (set != 1) {
    errors.Add(path, "Invalid value: exactly one of cidr, fqdn, service or workload");
    return;
  }
  if (!peer.service.text.empty() || !peer.workload.text.empty()) {
    errors.Add(path + (peer.service.text.empty() ? ".workload" : ".service"),
               "Unsupported value: Warren has no services or workloads to name; use cidr or fqdn");
    return;
  }
  if (!peer.fqdn.empty() && !allow) {
    errors.Add(path + ".fqdn",
               "Unsupported value: names are matched in allow rules only (as E2B's allowOut); "
               "reject the addresses, or reject 0.0.0.0/0 and allow the names you want");
  }
  // The entries themselves are parsed where they are enforced (sbnet's policy reader); here
  // only what cannot be one is refused.
  const std::string& v = peer.cidr.empty() ? peer.fqdn : peer.cidr;
  if (v.size() > 255 || v.find_first_of(" \t\r\n,") != std::string::npos) {
    errors.Add(path + (peer.cidr.empty() ? ".fqdn" : ".cidr"),
               fmt::format("Invalid value: \"{}\"", v.substr(0, 64)));
  }
}

}  // namespace

Status AdmitTrafficPolicy(Object& object) {
  return AdmitSpec<TrafficPolicySpec>(object, [&](TrafficPolicySpec& spec, FieldErrors& errors) {
    // Upstream's default. Warren applies every policy that selects a sandbox together, with
    // allow winning over reject (E2B's precedence), so the order they are read in changes
    // nothing; the field is kept for tools that sort by it.
    if (!spec.priority) spec.priority = 1000;
    if (spec.selector) {
      auto sel = ToLabelSelector(*spec.selector, "spec.selector");
      if (!sel.ok()) errors.Add("", sel.status().message());
    }
    if (spec.ingress && !spec.ingress->rules.empty()) {
      errors.Add("spec.ingress.rules",
                 "Unsupported value: a sandbox's ingress is its ports through the gateway, closed "
                 "by allowPublicTraffic: false and its traffic token");
    }
    if (!spec.egress) return;
    const auto& rules = spec.egress->rules;
    if (rules.size() > kMaxTrafficRules) {
      errors.Add("spec.egress.rules", fmt::format("Too many: {}: must have at most {} items",
                                                  rules.size(), kMaxTrafficRules));
    }
    size_t peers = 0;
    for (size_t i = 0; i < rules.size(); ++i) {
      const auto& r = rules[i];
      std::string path = fmt::format("spec.egress.rules[{}]", i);
      if (r.action != "allow" && r.action != "reject") {
        errors.Unsupported(path + ".action", r.action, {"allow", "reject"});
      }
      if (!r.from.empty()) errors.Add(path + ".from", "Forbidden: egress rules name `to` peers");
      if (!r.ports.empty()) {
        errors.Add(path + ".ports",
                   "Unsupported value: Warren's egress rules hold for every port of a "
                   "destination (names: 80 and 443); leave ports out");
      }
      if (r.to.empty()) errors.Required(path + ".to");
      peers += r.to.size();
      for (size_t j = 0; j < r.to.size(); ++j) {
        ValidateTrafficPeer(r.to[j], fmt::format("{}.to[{}]", path, j), r.action == "allow",
                            errors);
      }
    }
    if (peers > kMaxTrafficPeers) {
      errors.Add("spec.egress.rules",
                 fmt::format("Too many: {} peers: must have at most {}", peers, kMaxTrafficPeers));
    }
  });
}

Status AdmitTrafficPolicyStatus(Object& object) {
  return AdmitStatusAs<TrafficPolicyStatus>(object);
}

}  // namespace warren::api
