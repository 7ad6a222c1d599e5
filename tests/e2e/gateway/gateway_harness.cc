// A real sandbox behind the gateway, for the E2B SDK suite next to this file: warren-envd as
// pid 1 of a NativeRuntime sandbox (busybox layer, envd bind-mounted, an access token), a route
// for it and the gateway on an ephemeral port. Prints one JSON line
//   {"gateway":"http://127.0.0.1:<port>","sandboxId":"<id>","token":"<token>"}
// then obeys commands on stdin, one per line, answering "ok <command>" (or "error ..."):
//   pause   freeze the sandbox and mark its route paused      resume  the reverse
//   kill    what the E2B layer does on kill: remove the route (cutting open streams), destroy
// EOF ends it: everything it made is removed. Needs root.
//
//   gateway_e2e_harness --envd PATH

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <thread>

#include "base/ids.h"
#include "base/log.h"
#include "gateway/gateway.h"
#include "gateway/runtime_dialer.h"
#include "net/http_client.h"
#include "os/cgroup.h"
#include "runtime/native/native_runtime.h"
#include "runtime/testing/busybox_rootfs.h"

namespace warren {
namespace {

using namespace std::chrono_literals;

constexpr const char* kEnvdInSandbox = "/opt/warren/warren-envd";

int Fail(const std::string& why) {
  std::cerr << "gateway_e2e_harness: " << why << std::endl;
  return 1;
}

Status WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return ErrnoError("open " + path, errno);
  std::fputs(text.c_str(), f);
  std::fclose(f);
  if (chmod(path.c_str(), mode) != 0) return ErrnoError("chmod " + path, errno);
  return Status::Ok();
}

int Main(int argc, char** argv) {
  std::string envd;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--envd") envd = argv[++i];
  }
  if (envd.empty()) return Fail("usage: gateway_e2e_harness --envd PATH");
  if (geteuid() != 0) return Fail("needs root (it runs a sandbox)");
  base::SetLogLevel("warn");

  runtime::testing::TempDir dir("warren-gateway-e2e");
  std::string layer = dir.path() + "/layer";
  if (Status s = runtime::testing::MakeBusyboxLayer(layer); !s.ok()) return Fail(s.ToString());
  // The SDK runs commands as `/bin/bash -l -c <cmd>`; busybox's sh stands in.
  if (Status s = WriteFile(layer + "/bin/bash", "#!/bin/sh\nexec /bin/sh \"$@\"\n", 0755);
      !s.ok()) {
    return Fail(s.ToString());
  }
  std::string cgroup_parent = fmt::format("warren-gwe2e-{}", getpid());
  runtime::native::NativeRuntimeOptions options;
  options.state_dir = dir.path() + "/state";
  options.cgroup_parent = cgroup_parent;
  auto rt = runtime::native::NativeRuntime::Create(options);
  if (!rt.ok()) return Fail(rt.status().ToString());
  std::string id = base::NewSandboxId();
  std::string token = base::RandomHex(16);
  int code = 0;
  {
    runtime::SandboxSpec spec;
    spec.id = id;
    spec.layers = {layer};
    spec.writable_dir = dir.path() + "/rw";
    spec.command = {kEnvdInSandbox, "--listen",    "0.0.0.0:49983", "--access-token",
                    token,          "--log-level", "warn"};
    spec.mounts = {runtime::BindMount{envd, kEnvdInSandbox, true}};
    spec.env = {"PATH=/bin"};
    spec.log_path = dir.path() + "/envd.log";
    if (Status s = (*rt)->Create(spec); !s.ok()) return Fail(s.ToString());
    if (Status s = (*rt)->Start(id); !s.ok()) {
      (*rt)->Destroy(id).IgnoreError();
      return Fail(s.ToString());
    }
    bool ready = false;
    for (int i = 0; i < 500 && !ready; ++i) {
      auto client = net::HttpClient::WithDialer(
          [&](std::chrono::milliseconds t) { return (*rt)->Dial(id, gateway::kEnvdPort, t); },
          "localhost");
      auto resp = client->Do({.target = "/health", .timeout = 1s});
      ready = resp.ok() && resp->status == 204;
      if (!ready) std::this_thread::sleep_for(10ms);
    }

    gateway::RouteTable routes;
    gateway::Route route;
    route.sandbox_id = id;
    route.namespace_ = "default";
    route.name = "e2e";
    route.uid = "e2e-uid";
    route.state = gateway::RouteState::kRunning;
    route.access_token = token;
    route.resource_version = 1;
    routes.Upsert(route);
    gateway::RuntimeDialer dialer(**rt);
    gateway::GatewayOptions gw_options;
    gw_options.server.port = 0;
    gw_options.server.loop_threads = 2;
    auto gateway = gateway::Gateway::Start(gw_options, routes, dialer);
    if (!ready) {
      code = Fail("envd in the sandbox never answered /health");
    } else if (!gateway.ok()) {
      code = Fail(gateway.status().ToString());
    } else {
      std::cout << fmt::format(
                       R"({{"gateway":"http://127.0.0.1:{}","sandboxId":"{}","token":"{}"}})",
                       (*gateway)->port(), id, token)
                << std::endl;
      int64_t rv = 1;
      std::string line;
      while (std::getline(std::cin, line)) {
        Status s;
        route.resource_version = ++rv;
        if (line == "pause") {
          route.state = gateway::RouteState::kPaused;
          routes.Upsert(route);
          s = (*rt)->Pause(id);
        } else if (line == "resume") {
          s = (*rt)->Resume(id);
          route.state = gateway::RouteState::kRunning;
          routes.Upsert(route);
        } else if (line == "kill") {
          routes.Remove(id, rv);
          s = (*rt)->Destroy(id);
        } else {
          s = InvalidArgumentError("unknown command " + line);
        }
        std::cout << (s.ok() ? "ok " + line : "error " + s.ToString()) << std::endl;
      }
      (*gateway)->Shutdown(0ms);
    }
  }
  (*rt)->Destroy(id).IgnoreError();
  rt->reset();
  if (auto h = os::CgroupHierarchies::Detect(); h.ok()) {
    for (const std::string& d : h->DirsFor(cgroup_parent)) rmdir(d.c_str());
  }
  return code;
}

}  // namespace
}  // namespace warren

int main(int argc, char** argv) { return warren::Main(argc, argv); }
