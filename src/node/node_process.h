#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "api/sandbox_secrets.h"
#include "audit/journal.h"
#include "base/result.h"
#include "net/http_server.h"
#include "node/node_agent.h"
#include "node/options.h"
#include "store/store.h"

namespace warren::node {

struct NodeProcessOptions {
  // The cluster's store: etcd only ("etcd://host:port[,...][/prefix]"); a node shares it with
  // the servers, and SQLite cannot be shared between processes' watches.
  std::string store_url;
  // The cluster's seal key (<key_dir>/seal.key, copied from a server's key directory): opens
  // the secrets on Sandbox objects and derives the relay credential. Never made here: a node
  // with a key of its own could serve nobody.
  std::string key_dir;
  // The relay's listener, and the address published for servers to dial (default: the
  // listener's, which must then not be a wildcard).
  std::string address = "127.0.0.1";
  uint16_t port = 7790;  // 0 = ephemeral (port())
  std::string advertise_address;
  // How often the Node's heartbeat is renewed (the node lifecycle controller marks a node lost
  // when it stops).
  std::chrono::milliseconds heartbeat_interval{1000};
  // The agent: NodeAgentOptions::ForDataDir(<data dir>) plus the flags. secrets, node_name and
  // advertise_address are set here.
  NodeAgentOptions agent;
  std::string data_dir;
};

// `warren node`: the node agent as its own process (issue 17). Opens the cluster's store, runs a
// NodeAgent that takes only the sandboxes placed on it, serves the relay (relay_routes.h) and
// /metrics behind the relay credential plus /healthz open, and renews its Node's heartbeat.
// Create → Start → Stop; not thread-safe.
class NodeProcess {
 public:
  static Result<std::unique_ptr<NodeProcess>> Create(NodeProcessOptions options);
  ~NodeProcess();

  Status Start();
  void Stop();
  uint16_t port() const { return http_ ? http_->port() : 0; }

 private:
  explicit NodeProcess(NodeProcessOptions options) : options_(std::move(options)) {}
  void HeartbeatLoop();

  NodeProcessOptions options_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<api::SandboxSecrets> secrets_;
  std::string relay_token_;
  std::unique_ptr<audit::Journal> journal_;  // outlives the agent, which borrows it
  std::unique_ptr<NodeAgent> agent_;
  std::unique_ptr<net::HttpServer> http_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread heartbeat_;
};

}  // namespace warren::node
