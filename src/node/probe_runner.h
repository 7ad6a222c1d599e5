#pragma once

// One run of one probe against one sandbox (README.md, "Probes"): the side-effecting edge of
// probing. exec runs the command inside the sandbox through its envd (process.Process/Start
// with the node secret and Connect-Timeout-Ms = timeoutSeconds, so envd SIGKILLs the command's
// process group when it overruns: no process is left behind); httpGet and tcpSocket dial the
// port on the sandbox's own loopback (Runtime::Dial), never the host's network.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/types/pod_template.h"
#include "api/types/probe.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "node/envd_client.h"
#include "node/probe_state.h"

namespace warren::node {

// A probe ready to run: its action with a named port resolved to a number.
struct ProbeAction {
  enum class Type { kExec, kHttpGet, kTcpSocket };
  Type type = Type::kExec;
  std::vector<std::string> command;  // exec
  uint16_t port = 0;                 // httpGet, tcpSocket
  std::string path = "/";            // httpGet
  std::vector<api::HttpHeader> headers;
  std::chrono::milliseconds timeout{1000};
};

// Resolves `probe` against the ports of `container` (nullptr: only numeric ports).
// InvalidArgument naming the port when a named port is not among the container's.
Result<ProbeAction> ResolveProbeAction(const api::Probe& probe, const api::Container* container);

// How a probe reaches its sandbox. Both are called on a probe thread and may block.
struct ProbeTarget {
  std::shared_ptr<EnvdClient> envd;
  std::function<Result<base::UniqueFd>(uint16_t port, std::chrono::milliseconds timeout)> dial;
};

// Runs the probe once; a probe that cannot run (envd unreachable, a port nothing listens on,
// the timeout) is a failure whose output says why.
ProbeOutcome RunProbe(const ProbeAction& action, const ProbeTarget& target);

}  // namespace warren::node
