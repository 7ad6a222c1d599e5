#include "api/pod_template_validation.h"

#include <fmt/format.h>

#include <set>

#include "api/probe_validation.h"

namespace warren::api {
namespace {

void ValidateResourceMap(const std::map<std::string, Quantity>& m, std::string_view path,
                         FieldErrors& errors) {
  for (const auto& [name, q] : m) {
    std::string p = KeyPath(path, name);
    if (auto err = CheckQualifiedName(name)) errors.Add(p, *err);
    if (q.MilliValue() < 0) {
      errors.Add(p, fmt::format("Invalid value: \"{}\": must be greater than or equal to 0",
                                q.ToString()));
    }
  }
}

void ValidateContainer(const Container& c, std::string_view path,
                       const std::set<std::string>& volume_names, FieldErrors& errors) {
  if (c.name.empty()) {
    errors.Required(ChildPath(path, "name"));
  } else if (auto err = CheckDns1123Label(c.name)) {
    errors.Add(ChildPath(path, "name"), *err);
  }
  if (c.image.empty()) errors.Required(ChildPath(path, "image"));
  for (size_t i = 0; i < c.env.size(); ++i) {
    if (auto err = CheckEnvVarName(c.env[i].name)) {
      errors.Add(ChildPath(IndexPath(ChildPath(path, "env"), i), "name"), *err);
    }
  }
  std::string resources = ChildPath(path, "resources");
  ValidateResourceMap(c.resources.requests, ChildPath(resources, "requests"), errors);
  ValidateResourceMap(c.resources.limits, ChildPath(resources, "limits"), errors);
  for (const auto& [name, request] : c.resources.requests) {
    auto limit = c.resources.limits.find(name);
    if (limit != c.resources.limits.end() && request > limit->second) {
      errors.Add(KeyPath(ChildPath(resources, "requests"), name),
                 fmt::format("Invalid value: \"{}\": must be less than or equal to {} limit of {}",
                             request.ToString(), name, limit->second.ToString()));
    }
  }
  std::set<std::string> port_names;
  for (size_t i = 0; i < c.ports.size(); ++i) {
    const ContainerPort& p = c.ports[i];
    std::string pp = IndexPath(ChildPath(path, "ports"), i);
    if (p.container_port < 1 || p.container_port > 65535) {
      errors.Add(ChildPath(pp, "containerPort"),
                 fmt::format("Invalid value: {}: must be between 1 and 65535, inclusive",
                             p.container_port));
    }
    if (p.protocol != "TCP" && p.protocol != "UDP" && p.protocol != "SCTP") {
      errors.Unsupported(ChildPath(pp, "protocol"), p.protocol, {"TCP", "UDP", "SCTP"});
    }
    if (!p.name.empty()) {
      if (auto err = CheckDns1123Label(p.name)) errors.Add(ChildPath(pp, "name"), *err);
      if (!port_names.insert(p.name).second) {
        errors.Add(ChildPath(pp, "name"), fmt::format("Duplicate value: \"{}\"", p.name));
      }
    }
  }
  for (size_t i = 0; i < c.volume_mounts.size(); ++i) {
    const VolumeMount& m = c.volume_mounts[i];
    std::string mp = IndexPath(ChildPath(path, "volumeMounts"), i);
    if (m.name.empty()) {
      errors.Required(ChildPath(mp, "name"));
    } else if (!volume_names.count(m.name)) {
      errors.Add(ChildPath(mp, "name"), fmt::format("Not found: \"{}\"", m.name));
    }
    if (m.mount_path.empty() || m.mount_path.front() != '/') {
      errors.Add(ChildPath(mp, "mountPath"),
                 fmt::format("Invalid value: \"{}\": must be an absolute path", m.mount_path));
    }
    if (!m.sub_path.empty() &&
        (m.sub_path.front() == '/' || m.sub_path == ".." || m.sub_path.starts_with("../") ||
         m.sub_path.find("/../") != std::string::npos || m.sub_path.ends_with("/.."))) {
      errors.Add(
          ChildPath(mp, "subPath"),
          fmt::format("Invalid value: \"{}\": must be a relative path without '..'", m.sub_path));
    }
  }
  ValidateContainerProbes(c, path, errors);
}

}  // namespace

void DefaultPodTemplate(PodTemplateSpec& tmpl) {
  for (Container& c : tmpl.spec.containers) {
    for (ContainerPort& p : c.ports) {
      if (p.protocol.empty()) p.protocol = "TCP";
    }
    for (const auto& [name, limit] : c.resources.limits) {
      c.resources.requests.emplace(name, limit);
    }
  }
}

void ValidatePodTemplate(const PodTemplateSpec& tmpl, std::string_view path, FieldErrors& errors,
                         const std::vector<VolumeClaimTemplate>& claims) {
  std::string meta = ChildPath(path, "metadata");
  ValidateLabels(tmpl.metadata.labels, ChildPath(meta, "labels"), errors);
  ValidateAnnotations(tmpl.metadata.annotations, ChildPath(meta, "annotations"), errors);

  std::string spec = ChildPath(path, "spec");
  const PodSpec& pod = tmpl.spec;
  if (!pod.runtime_class_name.empty() && pod.runtime_class_name != kRuntimeNative &&
      pod.runtime_class_name != kRuntimeGvisor) {
    errors.Unsupported(ChildPath(spec, "runtimeClassName"), pod.runtime_class_name,
                       {kRuntimeNative, kRuntimeGvisor});
  }

  std::set<std::string> volume_names;
  for (size_t i = 0; i < pod.volumes.size(); ++i) {
    const Volume& v = pod.volumes[i];
    std::string vp = IndexPath(ChildPath(spec, "volumes"), i);
    if (v.name.empty()) {
      errors.Required(ChildPath(vp, "name"));
    } else if (auto err = CheckDns1123Label(v.name)) {
      errors.Add(ChildPath(vp, "name"), *err);
    } else if (!volume_names.insert(v.name).second) {
      errors.Add(ChildPath(vp, "name"), fmt::format("Duplicate value: \"{}\"", v.name));
    }
    int sources =
        (v.empty_dir ? 1 : 0) + (v.host_path ? 1 : 0) + (v.persistent_volume_claim ? 1 : 0);
    if (sources != 1) {
      errors.Add(vp, sources == 0 ? "must specify a volume type: Warren supports emptyDir, "
                                    "hostPath and persistentVolumeClaim volumes"
                                  : "may not specify more than 1 volume type");
    }
    if (v.persistent_volume_claim) {
      std::string claim = ChildPath(ChildPath(vp, "persistentVolumeClaim"), "claimName");
      if (v.persistent_volume_claim->claim_name.empty()) {
        errors.Required(claim);
      } else if (auto err = CheckDns1123Subdomain(v.persistent_volume_claim->claim_name)) {
        errors.Add(claim, *err);
      }
    }
    if (v.empty_dir && !v.empty_dir->medium.empty() && v.empty_dir->medium != "Memory") {
      errors.Unsupported(ChildPath(ChildPath(vp, "emptyDir"), "medium"), v.empty_dir->medium,
                         {"", "Memory"});
    }
    if (v.host_path) {
      std::string hp = ChildPath(vp, "hostPath");
      if (v.host_path->path.empty() || v.host_path->path.front() != '/') {
        errors.Add(ChildPath(hp, "path"), fmt::format("Invalid value: \"{}\": must be an "
                                                      "absolute path",
                                                      v.host_path->path));
      }
      const std::string& t = v.host_path->type;
      if (!t.empty() && t != "Directory" && t != "DirectoryOrCreate" && t != "File" &&
          t != "FileOrCreate") {
        errors.Unsupported(ChildPath(hp, "type"), t,
                           {"", "Directory", "DirectoryOrCreate", "File", "FileOrCreate"});
      }
    }
  }

  for (const VolumeClaimTemplate& c : claims) volume_names.insert(c.metadata.name);

  std::string containers = ChildPath(spec, "containers");
  if (pod.containers.empty()) errors.Required(containers);
  std::set<std::string> names;
  for (size_t i = 0; i < pod.containers.size(); ++i) {
    const Container& c = pod.containers[i];
    std::string cp = IndexPath(containers, i);
    ValidateContainer(c, cp, volume_names, errors);
    if (!c.name.empty() && !names.insert(c.name).second) {
      errors.Add(ChildPath(cp, "name"), fmt::format("Duplicate value: \"{}\"", c.name));
    }
  }
}

}  // namespace warren::api
