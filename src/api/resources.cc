#include "api/resources.h"

namespace warren::api {

const Quantity* EffectiveResource(const ResourceRequirements& r, const std::string& name) {
  if (auto it = r.limits.find(name); it != r.limits.end()) return &it->second;
  if (auto it = r.requests.find(name); it != r.requests.end()) return &it->second;
  return nullptr;
}

SandboxFootprint FootprintOf(const PodTemplateSpec& pod) {
  SandboxFootprint f;
  if (pod.spec.containers.empty()) return f;
  const ResourceRequirements& r = pod.spec.containers.front().resources;
  if (const Quantity* cpu = EffectiveResource(r, "cpu")) f.cpu_millicores = cpu->MilliValue();
  if (const Quantity* mem = EffectiveResource(r, "memory")) f.memory_bytes = mem->Value();
  return f;
}

SandboxFootprint RequestsOf(const PodTemplateSpec& pod) {
  SandboxFootprint f{.cpu_millicores = 0, .memory_bytes = 0};
  if (pod.spec.containers.empty()) return f;
  const ResourceRequirements& r = pod.spec.containers.front().resources;
  auto requested = [&r](const std::string& name) -> const Quantity* {
    if (auto it = r.requests.find(name); it != r.requests.end()) return &it->second;
    if (auto it = r.limits.find(name); it != r.limits.end()) return &it->second;
    return nullptr;
  };
  if (const Quantity* cpu = requested("cpu")) f.cpu_millicores = cpu->MilliValue();
  if (const Quantity* mem = requested("memory")) f.memory_bytes = mem->Value();
  return f;
}

}  // namespace warren::api
