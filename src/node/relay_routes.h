#pragma once

#include <string>

#include "net/router.h"
#include "node/node_agent.h"
#include "node/relay_wire.h"

namespace warren::node {

// The node relay: how the servers and gateways of a cluster reach the sandboxes of a
// `warren node` on another process or machine (issue 17). Served on the node's own listener
// (Node status.address), every route behind `Authorization: Bearer <token>` — the cluster's
// relay credential, derived from the seal key every member of a cluster shares
// (SealedBox::Token(kRelayTokenContext)), never an API key, so a tenant's key opens nothing
// here. 401 otherwise.
//
//   GET  /relay/v1/sandboxes/{id}/ports/{port}   Upgrade: warren-relay → 101, then the bytes of
//        a TCP connection to 127.0.0.1:port inside the sandbox (NodeAgent::Dial). Before the
//        101: 404 no such sandbox, 409 paused or stopped, 503 nothing listens.
//   POST /relay/v1/sandboxes/{id}/init?timeoutMs=N        envd /init with the body (claims)
//   POST /relay/v1/sandboxes/{id}/reset?timeoutMs=N       NodeAgent::Reset (recycling)
//   GET  /relay/v1/sandboxes/{id}/envd-auth               the headers envd wants ({name: value})
//   GET  /relay/v1/sandboxes/{id}/metrics                 the stats ring (relay_wire.h)
//   GET  /relay/v1/sandboxes/{id}/commandlog?cursorMs=&backward=&limit=&search=&stderrOnly=
//   POST /relay/v1/network                                NodeAgent::ApplyEgressPolicy(body)
//   GET  /apis/agents.kruise.io/v1alpha1/namespaces/{ns}/sandboxes/{name}/log   `warren logs`
//        (log_route.h), which a server forwards as it came (RelayClient::Forward)
//
// Errors are {"code": N, "message": "..."} with the Connect code name in "status"
// (relay_client.h turns them back into the same Status). The agent outlives the router.
void AddRelayRoutes(net::Router& router, NodeAgent& agent, std::string token);

// `handler` behind the relay credential (401 otherwise, compared in constant time): the relay's
// routes and the node's /metrics.
net::Handler RequireRelayCredential(std::string token, net::Handler handler);

}  // namespace warren::node
