#include "sandbox_servers.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "base/ids.h"
#include "os/cgroup.h"

namespace warren::gateway::testing {
namespace {

using namespace std::chrono_literals;

// Reads the request head (up to the blank line) so the connection is not reset under the
// answer; busybox ash keeps the '\r', hence "longer than one character".
constexpr const char* kReadHead = "while read -r line && [ ${#line} -gt 1 ]; do :; done\n";

constexpr const char* kStreamScript = R"(#!/bin/sh
read -r request
while read -r line && [ ${#line} -gt 1 ]; do :; done
printf 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n'
printf '7\r\ntick 1\n\r\n'
case "$request" in
  *finite*)
    while [ ! -e /tmp/go ]; do usleep 10000; done
    printf '7\r\ntick 2\n\r\n0\r\n\r\n'
    ;;
  *)
    while printf '5\r\ntick\n\r\n'; do usleep 20000; done
    ;;
esac
)";

Status WriteScript(const std::string& path, const std::string& text) {
  {
    std::ofstream f(path);
    f << text;
    if (!f) return InternalError(fmt::format("write {}", path));
  }
  if (chmod(path.c_str(), 0755) != 0) return ErrnoError(fmt::format("chmod {}", path), errno);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SandboxServers>> SandboxServers::Create() {
  static std::atomic<int> counter{0};
  std::unique_ptr<SandboxServers> s(new SandboxServers());
  s->dir_ = std::make_unique<runtime::testing::TempDir>("warren-gw");
  s->layer_ = s->dir_->path() + "/layer";
  RETURN_IF_ERROR(runtime::testing::MakeBusyboxLayer(s->layer_));
  std::string srv = s->layer_ + "/srv";
  if (mkdir(srv.c_str(), 0755) != 0) return ErrnoError("mkdir " + srv, errno);
  RETURN_IF_ERROR(WriteScript(srv + "/stream.sh", kStreamScript));
  RETURN_IF_ERROR(WriteScript(
      srv + "/upgrade.sh", std::string("#!/bin/sh\n") + kReadHead +
                               "printf 'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\n"
                               "Connection: Upgrade\\r\\n\\r\\n'\n"
                               "while read -r line; do printf 'echo: %s\\n' \"$line\"; done\n"));
  // The readiness probe connects and closes without a request: that must not count as "go".
  RETURN_IF_ERROR(WriteScript(srv + "/go.sh",
                              std::string("#!/bin/sh\nread -r request || exit 0\n") + kReadHead +
                                  "touch /tmp/go\n"
                                  "printf 'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n"
                                  "Connection: close\\r\\n\\r\\ngo'\n"));
  s->cgroup_parent_ = fmt::format("warren-gwtest-{}-{}", getpid(), counter++);
  runtime::native::NativeRuntimeOptions options;
  options.state_dir = s->dir_->path() + "/state";
  options.cgroup_parent = s->cgroup_parent_;
  ASSIGN_OR_RETURN(s->runtime_, runtime::native::NativeRuntime::Create(options));
  return s;
}

SandboxServers::~SandboxServers() {
  if (runtime_) {
    for (const runtime::SandboxInfo& info : runtime_->List()) {
      runtime_->Destroy(info.id).IgnoreError();
    }
    runtime_.reset();
  }
  if (!cgroup_parent_.empty()) {
    for (auto version : {std::optional<os::CgroupVersion>(os::CgroupVersion::kV2),
                         std::optional<os::CgroupVersion>()}) {
      auto h = version ? os::CgroupHierarchies::Detect(*version) : os::CgroupHierarchies::Detect();
      if (!h.ok()) continue;
      for (const std::string& d : h->DirsFor(cgroup_parent_)) rmdir(d.c_str());
    }
  }
}

Result<std::string> SandboxServers::Start() {
  std::string id = base::NewSandboxId();
  runtime::SandboxSpec spec;
  spec.id = id;
  spec.layers = {layer_};
  spec.writable_dir = dir_->path() + "/rw-" + id;
  spec.env = {"PATH=/bin", "HOME=/root"};
  spec.log_path = dir_->path() + "/" + id + ".log";
  spec.command = {
      "/bin/sh", "-c",
      fmt::format(
          "mkdir -p /tmp/www && hostname > /tmp/www/id.txt && echo ok > /tmp/www/health"
          " || exit 1; httpd -f -p 127.0.0.1:{} -h /tmp/www & httpd -f -p 127.0.0.1:{} -h /tmp/www"
          " & nc -ll -p {} -e /srv/stream.sh & nc -ll -p {} -e /srv/upgrade.sh"
          " & nc -ll -p {} -e /srv/go.sh & wait",
          kHttpdPort, kEnvdLikePort, kStreamPort, kUpgradePort, kGoPort)};
  RETURN_IF_ERROR(runtime_->Create(spec));
  RETURN_IF_ERROR(runtime_->Start(id));
  // Ready once each server accepts (a probe connection costs the nc servers one script run).
  // httpd's port is probed last: its files are written before it starts.
  for (uint16_t port : {kStreamPort, kUpgradePort, kGoPort, kEnvdLikePort, kHttpdPort}) {
    auto deadline = std::chrono::steady_clock::now() + 20s;
    for (;;) {
      auto fd = runtime_->Dial(id, port, 1s);
      if (fd.ok()) break;
      if (std::chrono::steady_clock::now() > deadline) {
        return fd.status().WithPrefix(fmt::format("server on port {} never came up", port));
      }
      std::this_thread::sleep_for(10ms);
    }
  }
  return id;
}

}  // namespace warren::gateway::testing
