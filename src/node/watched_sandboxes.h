#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "api/object.h"

namespace warren::node {

// The newest copy of each Sandbox the node agent's watch delivered, so a reconcile can start
// from it instead of a consistent read and a parse of the object (a pool claim writes its member
// twice, and each write is reconciled). A copy is handed out only when it is at least as new as
// everything the agent itself read or wrote for that object (Acted): the watch may lag the
// agent's own writes, and acting on an older copy than one it already acted on could repeat
// what the newer one records as done. Without a usable copy the caller reads the store.
// Thread-safe.
class WatchedSandboxes {
 public:
  // What a watch event carried: the object, or its deletion.
  void Saw(const std::string& key, std::shared_ptr<const api::Object> object);
  void Deleted(const std::string& key);
  // A full list replaced what the watch knew (objects deleted while it was down are not in it).
  void Listed(const std::vector<api::Object>& items);

  // The watched copy, or null when there is none or it is older than what the agent acted on.
  std::shared_ptr<const api::Object> Fresh(const std::string& key) const;
  // The agent read or wrote `key` at `resource_version`.
  void Acted(const std::string& key, int64_t resource_version);
  // The object is gone and the agent is done with it.
  void Forget(const std::string& key);

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const api::Object>, std::less<>> objects_;  // guarded
  std::map<std::string, int64_t, std::less<>> acted_;                               // guarded
};

}  // namespace warren::node
