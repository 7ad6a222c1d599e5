#pragma once

#include <functional>
#include <string>

#include "net/router.h"
#include "node/log_streamer.h"
#include "node/node_agent.h"
#include "store/store.h"

namespace warren::node {

// `warren logs`: the template command's output of a Sandbox, as a subresource of the resource
// API (like a Pod's /log):
//   GET /apis/agents.kruise.io/v1alpha1/namespaces/{ns}/sandboxes/{name}/log
//       [?follow=true] [?tailLines=N] [?limitBytes=N]
// 200 text/plain (chunked); with follow the body stays open and grows until the sandbox ends,
// is deleted, or the client leaves. Errors are Kubernetes Status objects (404 for an unknown
// Sandbox, 400 for bad parameters, 429 when LogStreamOptions::max_streams are open). Read from
// the log file envd writes into the sandbox's directory on the host (opened without following
// links: the sandbox writes there), so logs are there while the sandbox is paused and after it
// ended. The caller (net::Request::principal, set by the server's route guard) must see the
// namespace: another team's sandbox is 404. The handler only looks the Sandbox up on the
// blocking pool; the log itself is written
// by a LogStreamer thread (log_streamer.h), so open follows hold no HTTP worker. The agent and
// store must outlive the router, which owns the streamer.
// A sandbox of another node (`warren node`): relays the request there and answers it, or
// returns false for this process's own. Called on the route's blocking thread after the caller
// was found to see the sandbox.
using LogForwarder = std::function<bool(const std::string& sandbox_id, net::Responder& responder)>;

void RegisterLogRoute(net::Router& router, NodeAgent& agent, store::Store& store,
                      LogStreamOptions options = {}, LogForwarder forward = nullptr);
// The same route over any log source (tests).
void RegisterLogRoute(net::Router& router, LogSource source, store::Store& store,
                      LogStreamOptions options = {}, LogForwarder forward = nullptr);

}  // namespace warren::node
