#pragma once

// Reading Sandbox objects of a `warren server` child process from its resource API, for the
// tests that drive a whole server (server_test.cc, cli_verbs_test.cc).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "api/json.h"
#include "process.h"

namespace warren::node::testing {

// A busybox Sandbox (namespace default, 64Mi) whose template command is `/bin/sh -c script`.
inline std::string BusyboxSandbox(const std::string& name,
                                  const std::string& script = "exec sleep 3600") {
  return fmt::format(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {{name: {}, namespace: default}}
spec:
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c", "{}"]
        resources: {{limits: {{memory: 64Mi}}}}
)",
                     name, script);
}

inline bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// GET `path` with the admin key: the object, or null when not 200 (or the call failed).
inline api::Json GetJson(warren::testing::ServerProcess& s, const std::string& path) {
  net::ClientRequest req;
  req.target = path;
  auto resp = s.http().Do(req);
  if (!resp.ok() || resp->status != 200) return api::Json();
  auto j = api::ParseJson(resp->body);
  return j.ok() ? *j : api::Json();
}

// The Sandbox `name` in namespace default, or null when there is none (or the call failed).
inline api::Json GetSandbox(warren::testing::ServerProcess& s, const std::string& name) {
  return GetJson(s, "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes/" + name);
}

// Waits up to a minute for status.phase == `phase`; a test failure (and the last object) if not.
inline api::Json WaitPhase(warren::testing::ServerProcess& s, const std::string& name,
                           const std::string& phase) {
  using namespace std::chrono_literals;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  api::Json obj;
  while (std::chrono::steady_clock::now() < deadline) {
    obj = GetSandbox(s, name);
    if (obj.is_object() && obj.contains("status") && obj["status"].is_object() &&
        obj["status"].value("phase", "") == phase) {
      return obj;
    }
    std::this_thread::sleep_for(30ms);
  }
  ADD_FAILURE() << name << " never reached " << phase << ": " << api::DumpJson(obj);
  return obj;
}

// Waits up to a minute until the Sandbox is gone; a test failure if not.
inline void WaitGone(warren::testing::ServerProcess& s, const std::string& name) {
  using namespace std::chrono_literals;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (GetSandbox(s, name).is_null()) return;
    std::this_thread::sleep_for(30ms);
  }
  ADD_FAILURE() << name << " was not deleted";
}

}  // namespace warren::node::testing
