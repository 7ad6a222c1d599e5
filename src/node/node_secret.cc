#include "node/node_secret.h"

#include "base/encoding.h"
#include "base/secret_file.h"

namespace warren::node {

Result<NodeSecret> NodeSecret::LoadOrCreate(const std::string& path) {
  ASSIGN_OR_RETURN(std::string master, base::LoadOrCreateSecretFile(path, 32));
  return NodeSecret(std::move(master));
}

std::string NodeSecret::ForSandbox(const std::string& sandbox_id) const {
  return base::HexEncode(base::HmacSha256(master_, "envd-node-secret:" + sandbox_id));
}

}  // namespace warren::node
