#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/runtime.h"

namespace warren::runtime::testing {

// An in-memory Runtime for unit tests of the code that drives one (node agent, controllers,
// gateway): the same state machine, spec validation and error codes as the native runtime,
// no processes and no root. Tests steer it: inject failures, make pid 1 exit, set stats, seed
// sandboxes for Adopt, and route Dial to a real server on the host's loopback. Thread-safe;
// the exit callback runs on the caller's thread with no lock held.
class FakeRuntime final : public Runtime {
 public:
  Status Create(const SandboxSpec& spec) override;
  Status Start(std::string_view id) override;
  Status Pause(std::string_view id) override;
  Status Resume(std::string_view id) override;
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
  void SetExitCallback(ExitCallback callback) override;
  Status Rebase(const SandboxSpec& spec, bool discard_writable) override;
  Status UpdateResources(std::string_view id, const Resources& resources) override;

  // The next call of `op` ("Create", "Start", "Pause", "Resume", "Stop", "Destroy", "Stats",
  // "Dial", "Adopt", "Rebase", "UpdateResources") fails with `status` and changes nothing.
  void FailNext(std::string_view op, Status status);
  // pid 1 of a running or paused sandbox exits: state kStopped, the callback fires.
  void SimulateExit(std::string_view id, ExitStatus exit);
  void SetStats(std::string_view id, SandboxStats stats);
  // Dial(id, port) connects to 127.0.0.1:host_port on the host instead.
  void RouteDial(std::string_view id, uint16_t port, uint16_t host_port);
  // What the next Adopt() reports (as if left by an earlier runtime).
  void SeedForAdoption(const SandboxSpec& spec, SandboxState state);
  void AddOrphan(Orphan orphan);
  // Every call made, in order ("Create sb1", "Start sb1", ...).
  std::vector<std::string> Calls();
  // The spec a sandbox was created with.
  Result<SandboxSpec> SpecOf(std::string_view id);

 private:
  struct Fake {
    SandboxSpec spec;
    SandboxInfo info;
    SandboxStats stats;
    std::map<uint16_t, uint16_t> routes;
  };
  Status Begin(std::string_view op, std::string_view id);  // logs, consumes an injected failure
  void Fire(const std::string& id, const ExitStatus& exit);

  std::mutex mu_;
  std::map<std::string, Fake, std::less<>> sandboxes_;   // guarded by mu_
  std::map<std::string, Fake, std::less<>> seeded_;      // guarded by mu_
  std::vector<Orphan> orphans_;                          // guarded by mu_
  std::map<std::string, Status, std::less<>> failures_;  // guarded by mu_
  std::vector<std::string> calls_;                       // guarded by mu_
  ExitCallback on_exit_;                                 // guarded by mu_
  int next_pid_ = 1000;                                  // guarded by mu_
};

}  // namespace warren::runtime::testing
