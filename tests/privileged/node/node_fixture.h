#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/json.h"
#include "api/object.h"
#include "base/testing/status_macros.h"
#include "net/http_client.h"
#include "node/node_agent.h"
#include "store/testing/temp_store.h"

namespace warren::node::testing {

// What a sandbox could leave behind on the host: checked gone after delete.
struct Leftovers {
  std::vector<std::string> items;  // each names what is left ("cgroup /sys/fs/...")
};
// Everything of sandbox `id` of an agent with `options` that still exists: host mounts that
// name the agent's root or the sandbox's runtime dir, its cgroup in each hierarchy, its
// runtime state dir, its agent dir, process `pid` (when > 0), the image lease of `uid`.
Leftovers LeftoversOf(const NodeAgentOptions& options, const std::string& id, int pid,
                      const std::string& lease_prefix_uid = "");

// One HTTP/1.0 exchange over a connected non-blocking socket (a Dial into a sandbox); the raw
// response, "" when the request could not be sent.
std::string RawHttp(int fd, const std::string& request);

// Pids in the sandbox's cgroup (any of them shares its namespaces).
std::vector<int> SandboxPids(const NodeAgentOptions& options, const std::string& id);
// v1 freezer state ("FROZEN", "THAWED") of the sandbox's cgroup, "" when unreadable.
std::string FreezerState(const NodeAgentOptions& options, const std::string& id);

// A fresh data directory (0711), the agent's options for it (test-friendly timings, the built
// warren-envd), and a real SQLite store. Skips unless root. TearDown destroys whatever
// sandboxes a test left (through a fresh native runtime on the same state dir), so a failing
// test leaks nothing.
class NodeTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  NodeAgentOptions Options() const;
  // Starts an agent on the store (the test's agent_).
  void StartAgent();
  void StopAgent();

  // Creates a Sandbox from YAML (namespace default); returns the stored object.
  api::Object Apply(const std::string& yaml);
  // A Sandbox manifest: image, command (JSON array text, may be empty), limits (flow map text,
  // may be empty), restartPolicy, extra spec fields (YAML lines at spec level).
  static std::string SandboxYaml(const std::string& name, const std::string& image,
                                 const std::string& command, const std::string& limits = "",
                                 const std::string& restart_policy = "Never",
                                 const std::string& extra_spec = "");
  api::Object Get(const std::string& name);
  bool Exists(const std::string& name);
  // Waits until `pred` holds for the stored object (or fails after `timeout`).
  api::Object WaitFor(const std::string& name, const std::function<bool(const api::Object&)>& pred,
                      const std::string& what,
                      std::chrono::seconds timeout = std::chrono::seconds(60));
  api::Object WaitPhase(const std::string& name, const std::string& phase,
                        std::chrono::seconds timeout = std::chrono::seconds(60));
  void WaitGone(const std::string& name, std::chrono::seconds timeout = std::chrono::seconds(60));
  void Patch(const std::string& name, const std::string& merge_patch_json);
  void Delete(const std::string& name);
  // The Events about a Sandbox, as "Reason: message" lines.
  std::vector<std::string> EventsOf(const std::string& name);
  std::string WaitEvent(const std::string& name, const std::string& reason,
                        std::chrono::seconds timeout = std::chrono::seconds(60));

  static std::string Phase(const api::Object& obj);
  static std::string ConditionReason(const api::Object& obj, const std::string& type);
  static std::string ConditionStatus(const api::Object& obj, const std::string& type);
  static std::string SandboxId(const api::Object& obj);

  std::unique_ptr<store::testing::TempDir> dir_;
  std::string data_dir_;
  std::unique_ptr<store::testing::TempStore> store_;
  std::unique_ptr<NodeAgent> agent_;
};

}  // namespace warren::node::testing
