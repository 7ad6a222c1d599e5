#include "server/quota/quota_limits.h"

#include <fmt/format.h>

#include "api/typed_codec.h"
#include "api/types/resource_quota.h"

namespace warren::server::quota {
namespace {

void Tighten(int64_t value, const std::string& from, int64_t& limit, std::string& limit_from) {
  if (limit < 0 || value < limit) {
    limit = value;
    limit_from = from;
  }
}

std::string Cpu(int64_t millicores) {
  return millicores % 1000 == 0 ? fmt::format("{}", millicores / 1000)
                                : fmt::format("{}m", millicores);
}

std::string Memory(int64_t bytes) {
  constexpr int64_t kMi = int64_t{1} << 20;
  constexpr int64_t kGi = int64_t{1} << 30;
  if (bytes != 0 && bytes % kGi == 0) return fmt::format("{}Gi", bytes / kGi);
  if (bytes != 0 && bytes % kMi == 0) return fmt::format("{}Mi", bytes / kMi);
  return fmt::format("{}", bytes);
}

}  // namespace

Limits LimitsOf(const std::vector<const api::Object*>& quotas) {
  Limits out;
  for (const api::Object* q : quotas) {
    auto spec = api::DecodeSpec<api::ResourceQuotaSpec>(*q);
    if (!spec.ok()) continue;
    const std::string& name = q->metadata.name;
    for (const auto& [key, value] : spec->hard) {
      if (key == api::kQuotaSandboxes) {
        Tighten(value.MilliValue() / 1000, name, out.sandboxes, out.sandboxes_from);
      } else if (key == api::kQuotaCpu) {
        Tighten(value.MilliValue(), name, out.cpu_millicores, out.cpu_from);
      } else if (key == api::kQuotaMemory) {
        Tighten(value.Value(), name, out.memory_bytes, out.memory_from);
      }
    }
  }
  return out;
}

std::optional<std::string> Exceeds(const Limits& limits, const Usage& used,
                                   const api::SandboxFootprint& add) {
  if (limits.sandboxes >= 0 && used.sandboxes + 1 > limits.sandboxes) {
    return fmt::format(
        "exceeded quota: {}, requested: sandboxes=1, used: sandboxes={}, limited: sandboxes={}",
        limits.sandboxes_from, used.sandboxes, limits.sandboxes);
  }
  if (limits.cpu_millicores >= 0 &&
      used.cpu_millicores + add.cpu_millicores > limits.cpu_millicores) {
    return fmt::format("exceeded quota: {}, requested: cpu={}, used: cpu={}, limited: cpu={}",
                       limits.cpu_from, Cpu(add.cpu_millicores), Cpu(used.cpu_millicores),
                       Cpu(limits.cpu_millicores));
  }
  if (limits.memory_bytes >= 0 && used.memory_bytes + add.memory_bytes > limits.memory_bytes) {
    return fmt::format(
        "exceeded quota: {}, requested: memory={}, used: memory={}, limited: memory={}",
        limits.memory_from, Memory(add.memory_bytes), Memory(used.memory_bytes),
        Memory(limits.memory_bytes));
  }
  return std::nullopt;
}

api::Json UsageJson(const Usage& used) {
  return {{api::kQuotaSandboxes, fmt::format("{}", used.sandboxes)},
          {api::kQuotaCpu, Cpu(used.cpu_millicores)},
          {api::kQuotaMemory, Memory(used.memory_bytes)}};
}

api::Json LimitsJson(const Limits& limits) {
  api::Json out = api::Json::object();
  if (limits.sandboxes >= 0) out[api::kQuotaSandboxes] = fmt::format("{}", limits.sandboxes);
  if (limits.cpu_millicores >= 0) out[api::kQuotaCpu] = Cpu(limits.cpu_millicores);
  if (limits.memory_bytes >= 0) out[api::kQuotaMemory] = Memory(limits.memory_bytes);
  return out;
}

}  // namespace warren::server::quota
