#include "runtime/runtime_router.h"

#include <fmt/format.h>

#include "base/check.h"

namespace warren::runtime {

RuntimeRouter::RuntimeRouter(std::map<std::string, RuntimePtr, std::less<>> runtimes,
                             std::string default_class)
    : runtimes_(std::move(runtimes)), default_class_(std::move(default_class)) {
  CHECK_MSG(runtimes_.contains(default_class_), "the default runtime class is not given");
  for (const auto& [name, rt] : runtimes_)
    CHECK_MSG(rt != nullptr, "a runtime class has no runtime");
}

std::vector<std::string> RuntimeRouter::Classes() const {
  std::vector<std::string> out = {default_class_};
  for (const auto& [name, rt] : runtimes_) {
    if (name != default_class_) out.push_back(name);
  }
  return out;
}

Result<std::string> RuntimeRouter::ClassOf(std::string_view id) const {
  std::lock_guard lock(mu_);
  auto it = class_of_.find(id);
  if (it == class_of_.end()) return NotFoundError(fmt::format("sandbox {} not found", id));
  return it->second;
}

Runtime* RuntimeRouter::Get(std::string_view runtime_class) const {
  auto it =
      runtimes_.find(runtime_class.empty() ? std::string_view(default_class_) : runtime_class);
  return it == runtimes_.end() ? nullptr : it->second.get();
}

Result<Runtime*> RuntimeRouter::Holder(std::string_view id) const {
  std::lock_guard lock(mu_);
  auto it = class_of_.find(id);
  if (it == class_of_.end()) return NotFoundError(fmt::format("sandbox {} not found", id));
  return runtimes_.find(it->second)->second.get();
}

Status RuntimeRouter::Create(const SandboxSpec& spec) {
  const std::string cls = spec.runtime_class.empty() ? default_class_ : spec.runtime_class;
  Runtime* rt = Get(cls);
  if (rt == nullptr) {
    return FailedPreconditionError(fmt::format(
        "sandbox {}: runtime class \"{}\" is not available on this node", spec.id, cls));
  }
  {
    std::lock_guard lock(mu_);
    auto it = class_of_.find(spec.id);
    if (it != class_of_.end() && it->second != cls) {
      return AlreadyExistsError(
          fmt::format("sandbox {} exists in runtime class \"{}\"", spec.id, it->second));
    }
    class_of_[spec.id] = cls;  // before Create: its exit callback may already ask
  }
  Status s = rt->Create(spec);
  if (!s.ok() && s.code() != StatusCode::kAlreadyExists) {
    std::lock_guard lock(mu_);
    class_of_.erase(spec.id);
  }
  return s;
}

Status RuntimeRouter::Start(std::string_view id) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->Start(id);
}

Status RuntimeRouter::Pause(std::string_view id) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->Pause(id);
}

Status RuntimeRouter::Resume(std::string_view id) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->Resume(id);
}

Status RuntimeRouter::Hibernate(std::string_view id) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->Hibernate(id);
}

Status RuntimeRouter::Stop(std::string_view id, std::chrono::milliseconds grace) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->Stop(id, grace);
}

Status RuntimeRouter::Destroy(std::string_view id) {
  auto holder = Holder(id);
  if (!holder.ok()) {
    // Not known (an orphan on disk, or never made): each runtime may still hold remains of it.
    Status last = holder.status();
    for (const auto& [name, rt] : runtimes_) {
      Status s = rt->Destroy(id);
      if (s.ok()) return s;
      if (s.code() != StatusCode::kNotFound) last = s;
    }
    return last;
  }
  Status s = (*holder)->Destroy(id);
  if (s.ok() || s.code() == StatusCode::kNotFound) {
    std::lock_guard lock(mu_);
    class_of_.erase(std::string(id));
  }
  return s;
}

Result<SandboxStats> RuntimeRouter::Stats(std::string_view id) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->Stats(id);
}

Result<SandboxInfo> RuntimeRouter::Inspect(std::string_view id) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->Inspect(id);
}

std::vector<SandboxInfo> RuntimeRouter::List() {
  std::vector<SandboxInfo> out;
  for (const auto& [name, rt] : runtimes_) {
    for (auto& info : rt->List()) out.push_back(std::move(info));
  }
  return out;
}

Result<ExitStatus> RuntimeRouter::Wait(std::string_view id, std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->Wait(id, timeout);
}

Result<AdoptionReport> RuntimeRouter::Adopt() {
  AdoptionReport all;
  for (const auto& [name, rt] : runtimes_) {
    auto adopted = rt->Adopt();
    if (!adopted.ok()) return adopted.status().WithPrefix("runtime class " + name);
    AdoptionReport report = std::move(adopted).value();
    std::lock_guard lock(mu_);
    for (auto& info : report.adopted) {
      class_of_[info.id] = name;
      all.adopted.push_back(std::move(info));
    }
    for (auto& orphan : report.orphans) {
      orphan_class_[orphan.id] = name;
      all.orphans.push_back(std::move(orphan));
    }
  }
  return all;
}

Status RuntimeRouter::RemoveOrphan(const Orphan& orphan) {
  std::string cls;
  {
    std::lock_guard lock(mu_);
    auto it = orphan_class_.find(orphan.id);
    if (it != orphan_class_.end()) cls = it->second;
  }
  Runtime* rt = Get(cls);
  if (rt == nullptr) return NotFoundError(fmt::format("orphan {} not found", orphan.id));
  Status s = rt->RemoveOrphan(orphan);
  if (s.ok()) {
    std::lock_guard lock(mu_);
    orphan_class_.erase(orphan.id);
  }
  return s;
}

Result<base::UniqueFd> RuntimeRouter::Dial(std::string_view id, uint16_t port,
                                           std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->Dial(id, port, timeout);
}

std::optional<Result<base::UniqueFd>> RuntimeRouter::DialNow(std::string_view id, uint16_t port) {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock) return std::nullopt;  // an event loop never waits, not even for this table
  auto it = class_of_.find(id);
  if (it == class_of_.end()) {
    return Result<base::UniqueFd>(NotFoundError(fmt::format("sandbox {} not found", id)));
  }
  Runtime* rt = runtimes_.find(it->second)->second.get();
  lock.unlock();
  return rt->DialNow(id, port);
}

void RuntimeRouter::SetExitCallback(ExitCallback callback) {
  for (const auto& [name, rt] : runtimes_) rt->SetExitCallback(callback);
}

StateSupport RuntimeRouter::SupportedState(std::string_view id) const {
  auto holder = Holder(id);
  return holder.ok() ? (*holder)->SupportedState(id) : StateSupport{};
}

Status RuntimeRouter::CaptureWritableLayer(
    std::string_view id, const std::function<Status(const WritableLayerView&)>& read) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->CaptureWritableLayer(id, read);
}

Status RuntimeRouter::CaptureMemory(std::string_view id, const std::string& image_dir,
                                    const std::function<Status(const WritableLayerView&)>& read) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->CaptureMemory(id, image_dir, read);
}

Status RuntimeRouter::UpdateEgress(std::string_view id, const sbnet::EgressPolicy& policy) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->UpdateEgress(id, policy);
}

Status RuntimeRouter::Rebase(const SandboxSpec& spec, bool discard_writable) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(spec.id));
  return rt->Rebase(spec, discard_writable);
}

Status RuntimeRouter::UpdateResources(std::string_view id, const Resources& resources) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->UpdateResources(id, resources);
}

Status RuntimeRouter::SetCpuWeight(std::string_view id, int weight) {
  ASSIGN_OR_RETURN(Runtime * rt, Holder(id));
  return rt->SetCpuWeight(id, weight);
}

}  // namespace warren::runtime
