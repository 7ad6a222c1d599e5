#include "server/cluster/node_router.h"

#include <fmt/format.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/node.h"
#include "api/types/sandbox.h"
#include "node/sandbox_object.h"

namespace warren::server::cluster {

using node::SandboxIdOf;

NodeRouter::NodeRouter(store::Store& store, std::string relay_token, std::string local_node)
    : relay_token_(std::move(relay_token)),
      local_node_(std::move(local_node)),
      sandboxes_(store, {.kind = &api::SandboxKind(), .name = "node-router-sandboxes"}),
      nodes_(store, {.kind = &api::NodeKind(), .name = "node-router-nodes"}) {
  sandboxes_.AddHandler([this](const controller::Informer::Change& c) { OnSandbox(c); });
  nodes_.AddHandler([this](const controller::Informer::Change& c) { OnNode(c); });
}

NodeRouter::~NodeRouter() { Stop(); }

Status NodeRouter::Start() {
  RETURN_IF_ERROR(nodes_.Start());
  return sandboxes_.Start();
}

void NodeRouter::Stop() {
  sandboxes_.Stop();
  nodes_.Stop();
}

void NodeRouter::OnSandbox(const controller::Informer::Change& c) {
  const std::string id = SandboxIdOf(*c.object);
  if (id.empty()) return;
  std::lock_guard lock(mu_);
  if (c.type == store::EventType::kDeleted) {
    // Another object may hold the id by now (made again under it): forget only this one's.
    auto it = node_of_.find(id);
    if (it != node_of_.end() && it->second.uid == c.object->metadata.uid) node_of_.erase(it);
    return;
  }
  auto status = api::DecodeStatus<api::SandboxStatus>(*c.object);
  node_of_[id] = Placement{status.ok() ? status->node_name : "", c.object->metadata.uid};
}

void NodeRouter::OnNode(const controller::Informer::Change& c) {
  const std::string& name = c.object->metadata.name;
  std::string address;
  if (c.type != store::EventType::kDeleted) {
    auto status = api::DecodeStatus<api::NodeStatus>(*c.object);
    if (status.ok()) address = status->address;
  }
  std::lock_guard lock(mu_);
  std::string old = address_of_[name];
  if (c.type == store::EventType::kDeleted) {
    address_of_.erase(name);
  } else {
    address_of_[name] = address;
  }
  // A client of an address no node has any more holds sockets to nothing.
  if (old.empty() || old == address) return;
  for (const auto& [node, a] : address_of_) {
    if (a == old) return;
  }
  relays_.erase(old);
}

Result<std::shared_ptr<node::RelayClient>> NodeRouter::RemoteFor(std::string_view sandbox_id) {
  std::lock_guard lock(mu_);
  auto placed = node_of_.find(std::string(sandbox_id));
  if (placed == node_of_.end() || placed->second.node.empty()) {
    if (!local_node_.empty()) return std::shared_ptr<node::RelayClient>();
    return NotFoundError(fmt::format("sandbox {} runs on no node", sandbox_id));
  }
  const std::string& node = placed->second.node;
  if (node == local_node_) return std::shared_ptr<node::RelayClient>();
  auto address = address_of_.find(node);
  if (address == address_of_.end() || address->second.empty()) {
    return UnavailableError(fmt::format(
        "sandbox {} runs on node {}, which publishes no relay address", sandbox_id, node));
  }
  auto& relay = relays_[address->second];
  if (!relay) {
    auto created = node::RelayClient::Create(address->second, relay_token_);
    if (!created.ok()) return created.status().WithPrefix(fmt::format("node {}", node));
    relay = std::move(*created);
  }
  return relay;
}

}  // namespace warren::server::cluster
