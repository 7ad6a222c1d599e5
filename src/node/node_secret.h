#pragma once

#include <string>

#include "base/result.h"

namespace warren::node {

// The secret envd's node-only endpoints (/reset, a token-replacing /init, /logs without the
// access token) are guarded by. One random master secret per agent root (<root>/node.secret,
// 0600, made on first use); each sandbox gets HMAC-SHA256(master, sandbox id), so a sandbox
// learning its own secret learns nothing about another's, and nothing per sandbox needs to be
// stored. Value type; thread-safe once made.
class NodeSecret {
 public:
  static Result<NodeSecret> LoadOrCreate(const std::string& path);
  // For tests.
  static NodeSecret FromMaster(std::string master) { return NodeSecret(std::move(master)); }

  // 64 hex characters.
  std::string ForSandbox(const std::string& sandbox_id) const;

 private:
  explicit NodeSecret(std::string master) : master_(std::move(master)) {}
  std::string master_;
};

}  // namespace warren::node
