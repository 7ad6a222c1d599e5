#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/result.h"
#include "controller/informer.h"
#include "node/relay_client.h"
#include "store/store.h"

namespace warren::server::cluster {

// Which node runs a sandbox, and that node's relay (node/relay_client.h) when it is not this
// process's own: what lets the gateway, the E2B API and the pools of any server reach the
// sandboxes of every `warren node` (issue 17). Kept from two informers — Sandboxes (the id label
// → status.nodeName) and Nodes (name → status.address) — so a lookup reads memory only.
// One RelayClient per node address, kept while the address stands. Thread-safe after Start.
class NodeRouter {
 public:
  // `local_node`: the node agent inside this process ("" when there is none); its sandboxes
  // are never relayed. `relay_token`: the cluster's relay credential.
  NodeRouter(store::Store& store, std::string relay_token, std::string local_node);
  ~NodeRouter();

  Status Start();
  void Stop();

  // The relay of the node running `sandbox_id`; null when that is the local node (or the
  // sandbox is not placed yet, which the local agent answers for). NotFound when the sandbox is
  // known to no informer and there is no local node; Unavailable when its node has no address
  // (an embedded node of another server: not reachable from here) or no Node object.
  Result<std::shared_ptr<node::RelayClient>> RemoteFor(std::string_view sandbox_id);

 private:
  void OnSandbox(const controller::Informer::Change& change);
  void OnNode(const controller::Informer::Change& change);

  const std::string relay_token_;
  const std::string local_node_;
  controller::Informer sandboxes_;
  controller::Informer nodes_;

  struct Placement {
    std::string node;
    std::string uid;  // of the object that holds the id
  };
  std::mutex mu_;
  std::unordered_map<std::string, Placement> node_of_;       // by sandbox id; guarded by mu_
  std::unordered_map<std::string, std::string> address_of_;  // node → relay address; guarded
  std::map<std::string, std::shared_ptr<node::RelayClient>> relays_;  // by address; guarded
};

}  // namespace warren::server::cluster
