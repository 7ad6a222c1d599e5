#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/runtime.h"

namespace warren::runtime {

// Several runtimes behind one Runtime, one per runtime class (a pod's runtimeClassName: "native"
// by default, "gvisor" next): Create goes to the class its spec names (SandboxSpec::
// runtime_class, empty = the default class), every other call to the runtime that holds the
// sandbox. Which one holds which sandbox is learnt from Create and from each runtime's Adopt
// (every runtime keeps its own state on disk), so after a restart each sandbox is found in the
// runtime that made it, never guessed. Ids are unique across classes (Create refuses an id
// another class holds: AlreadyExists).
//
// Thread-safe as the runtimes it holds are; owns them.
class RuntimeRouter final : public Runtime {
 public:
  // `runtimes`: class name → runtime, at least one; `default_class` must be one of them.
  RuntimeRouter(std::map<std::string, RuntimePtr, std::less<>> runtimes, std::string default_class);

  // The classes this node offers: the default first, then the others by name.
  std::vector<std::string> Classes() const;
  // The class of a sandbox it holds; NotFound otherwise.
  Result<std::string> ClassOf(std::string_view id) const;
  Runtime* Get(std::string_view runtime_class) const;

  Status Create(const SandboxSpec& spec) override;
  Status Start(std::string_view id) override;
  Status Pause(std::string_view id) override;
  Status Resume(std::string_view id) override;
  Status Hibernate(std::string_view id) override;
  Status Stop(std::string_view id, std::chrono::milliseconds grace) override;
  Status Destroy(std::string_view id) override;
  Result<SandboxStats> Stats(std::string_view id) override;
  Result<SandboxInfo> Inspect(std::string_view id) override;
  std::vector<SandboxInfo> List() override;
  Result<ExitStatus> Wait(std::string_view id, std::chrono::milliseconds timeout) override;
  Result<AdoptionReport> Adopt() override;
  Status RemoveOrphan(const Orphan& orphan) override;
  Result<base::UniqueFd> Dial(std::string_view id, uint16_t port,
                              std::chrono::milliseconds timeout) override;
  std::optional<Result<base::UniqueFd>> DialNow(std::string_view id, uint16_t port) override;
  void SetExitCallback(ExitCallback callback) override;
  StateSupport SupportedState(std::string_view id) const override;
  Status UpdateEgress(std::string_view id, const sbnet::EgressPolicy& policy) override;
  Status Rebase(const SandboxSpec& spec, bool discard_writable) override;
  Status UpdateResources(std::string_view id, const Resources& resources) override;
  Status SetCpuWeight(std::string_view id, int weight) override;
  Status CaptureWritableLayer(std::string_view id,
                              const std::function<Status(const WritableLayerView&)>& read) override;
  Status CaptureMemory(std::string_view id, const std::string& image_dir,
                       const std::function<Status(const WritableLayerView&)>& read) override;

 private:
  // The runtime holding `id`: NotFound naming the sandbox when none does.
  Result<Runtime*> Holder(std::string_view id) const;

  const std::map<std::string, RuntimePtr, std::less<>> runtimes_;
  const std::string default_class_;
  mutable std::mutex mu_;
  std::map<std::string, std::string, std::less<>> class_of_;      // guarded by mu_; id → class
  std::map<std::string, std::string, std::less<>> orphan_class_;  // guarded by mu_; id → class
};

}  // namespace warren::runtime
