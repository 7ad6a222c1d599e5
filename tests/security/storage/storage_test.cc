// Ephemeral storage against a real `warren server`: what a sandbox writes (its writable layer,
// its command's log, an upload through envd) stops at its ephemeral-storage inside the sandbox,
// and the host gives it no more than that. The host's side is measured on the btrfs image the
// node keeps sandboxes in (<data>/node/sandboxes.btrfs, sparse): its allocated bytes are
// exactly what sandboxes take from the host disk, and they are not disturbed by whatever else
// this machine writes at the same time.

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "api/json.h"
#include "api/object_codec.h"
#include "api/sandbox_secrets.h"
#include "node/options.h"
#include "node/sandbox_paths.h"
#include "os/netns.h"
#include "process.h"

namespace warren::security {
namespace {

using namespace std::chrono_literals;
using warren::testing::CommandResult;
using warren::testing::ServerProcess;

constexpr int64_t kMi = int64_t{1} << 20;
// What btrfs and the image take beyond a sandbox's own bytes (metadata, DUP copies of it).
constexpr int64_t kHostSlack = 24 * kMi;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Bytes a file takes on its file system (what a sparse image costs the host).
int64_t AllocatedBytes(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_blocks) * 512;
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return st.st_size;
}

std::string Phase(const api::Json& obj) {
  if (!obj.is_object() || !obj.contains("status") || !obj["status"].is_object()) return "";
  return obj["status"].value("phase", "");
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

class StorageAttack : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (real sandboxes)";
    if (!enforce_) setenv("WARREN_NODE_STORAGE", "off", 1);
    setenv("WARREN_ENVD_PATH", WARREN_ENVD_BIN, 1);
    setenv("WARREN_NODE_AGENT", "on", 1);
    setenv("WARREN_NODE_DESTROY_ON_STOP", "1", 1);  // nothing outlives the test's server
    server_ = std::make_unique<ServerProcess>();
    unsetenv("WARREN_NODE_STORAGE");
    options_ = node::NodeAgentOptions::ForDataDir(server_->data_dir());
    image_ = options_.root + "/sandboxes.btrfs";
  }
  void TearDown() override {
    if (!server_) return;
    for (const std::string& name : applied_) server_->Cli({"delete", "sbx", name});
    for (const std::string& name : applied_) WaitGone(name);
    server_->Stop();
    // With no sandbox left the server unmounts its storage (the loop device goes with it).
    std::ifstream mounts("/proc/self/mountinfo");
    std::string line;
    while (std::getline(mounts, line)) {
      EXPECT_FALSE(Contains(line, options_.root)) << "left mounted after stop: " << line;
    }
  }

  // Applies a busybox Sandbox running `script` under sh with the given limits (flow map).
  void Apply(const std::string& name, const std::string& limits, const std::string& script) {
    std::string yaml =
        "apiVersion: agents.kruise.io/v1alpha1\nkind: Sandbox\n"
        "metadata: {name: " +
        name +
        ", namespace: default}\n"
        "spec:\n  template:\n    spec:\n      containers:\n      - name: main\n"
        "        image: busybox\n"
        "        command: [\"/bin/sh\", \"-c\", " +
        api::Json(script).dump() +
        "]\n"
        "        resources: {limits: " +
        limits + "}\n";
    CommandResult apply = server_->Cli({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(apply.exit_code, 0) << apply.err;
    applied_.push_back(name);
  }

  api::Json Get(const std::string& name) {
    net::ClientRequest req;
    req.target = "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes/" + name;
    auto resp = server_->http().Do(req);
    if (!resp.ok() || resp->status != 200) return api::Json();
    auto j = api::ParseJson(resp->body);
    return j.ok() ? *j : api::Json();
  }

  // The sandbox id once Running (fails the test otherwise).
  std::string WaitRunning(const std::string& name) {
    auto deadline = std::chrono::steady_clock::now() + 60s;
    api::Json obj;
    while (std::chrono::steady_clock::now() < deadline) {
      obj = Get(name);
      if (Phase(obj) == "Running") {
        return obj["metadata"]["labels"].value("agents.kruise.io/sandbox-id", "");
      }
      std::this_thread::sleep_for(50ms);
    }
    ADD_FAILURE() << name << " never ran: " << api::DumpJson(obj);
    return "";
  }

  void WaitGone(const std::string& name) {
    auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline && !Get(name).is_null()) {
      std::this_thread::sleep_for(50ms);
    }
  }

  // The command's log as the host keeps it, once it holds `marker` (or after 60 s).
  std::string WaitLog(const std::string& id, const std::string& marker) {
    const std::string log = node::SandboxPaths::For(options_.root, id).command_log;
    auto deadline = std::chrono::steady_clock::now() + 60s;
    std::string text;
    while (std::chrono::steady_clock::now() < deadline) {
      text = ReadFile(log);
      if (Contains(text, marker)) break;
      std::this_thread::sleep_for(50ms);
    }
    return text;
  }

  // Waits until `path` stops growing (same size for a second); returns that size.
  static int64_t WaitStable(const std::string& path) {
    int64_t last = -2;
    auto since = std::chrono::steady_clock::now();
    auto deadline = since + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      int64_t now = FileSize(path);
      if (now != last) {
        last = now;
        since = std::chrono::steady_clock::now();
      } else if (now > 0 && std::chrono::steady_clock::now() - since > 1s) {
        break;
      }
      std::this_thread::sleep_for(100ms);
    }
    return last;
  }

  bool enforce_ = true;
  std::unique_ptr<ServerProcess> server_;
  node::NodeAgentOptions options_;
  std::string image_;
  std::vector<std::string> applied_;
};

TEST_F(StorageAttack, WritingPastEphemeralStorageFailsInsideAndTheHostIsUntouched) {
  // 256 MiB into a 64 MiB sandbox; hold the file so the host side can be measured, then
  // delete it and write again: the sandbox is usable as soon as it frees its space.
  Apply("filler", "{memory: 128Mi, ephemeral-storage: 64Mi}",
        "out=$(dd if=/dev/zero of=/big bs=1M count=256 2>&1; echo \"rc=$?\"); sync; sleep 4; "
        "size=$(wc -c < /big); rm -f /big; echo \"$out\"; echo \"size=$size\"; "
        "if dd if=/dev/zero of=/again bs=1M count=16 2>/dev/null; then echo AFTER=ok; "
        "else echo AFTER=failed; fi; exec sleep 3600");
  const int64_t before = AllocatedBytes(image_);
  ASSERT_GT(before, 0) << "the node keeps sandboxes in " << image_;
  const std::string id = WaitRunning("filler");
  ASSERT_FALSE(id.empty());
  const std::string big = node::SandboxPaths::For(options_.root, id).writable + "/upper/big";
  const int64_t held = WaitStable(big);
  const int64_t peak = AllocatedBytes(image_);
  EXPECT_LE(held, 64 * kMi) << "the file grew past the limit";
  EXPECT_GT(held, 32 * kMi) << "the sandbox could not use its own space";
  EXPECT_LE(peak - before, 64 * kMi + kHostSlack)
      << "the host gave the sandbox more than its ephemeral-storage";

  const std::string log = WaitLog(id, "AFTER=");
  EXPECT_TRUE(Contains(log, "Disk quota exceeded") || Contains(log, "No space left"))
      << "the write must fail inside the sandbox:\n"
      << log;
  EXPECT_FALSE(Contains(log, "rc=0")) << log;
  EXPECT_TRUE(Contains(log, "AFTER=ok")) << "writing after freeing the space:\n" << log;
}

TEST_F(StorageAttack, AFloodOfLogIsBoundedByEphemeralStorage) {
  // One 512 MB line on stdout, into a sandbox of 32 MiB: envd's command log stops growing at
  // the limit, and envd (pid 1) keeps running.
  Apply("flood", "{memory: 128Mi, ephemeral-storage: 32Mi}",
        "head -c 536870912 /dev/zero | tr '\\000' x; exec sleep 3600");
  const int64_t before = AllocatedBytes(image_);
  const std::string id = WaitRunning("flood");
  ASSERT_FALSE(id.empty());
  const std::string log = node::SandboxPaths::For(options_.root, id).command_log;
  const int64_t logged = WaitStable(log);
  EXPECT_LE(logged, 32 * kMi);
  EXPECT_GT(logged, 16 * kMi) << "the log is written until the limit";
  EXPECT_LE(AllocatedBytes(image_) - before, 32 * kMi + kHostSlack);
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(Phase(Get("flood")), "Running") << "a full log must not take the sandbox down";
}

TEST_F(StorageAttack, AnUploadPastEphemeralStorageIs507AndLeavesNoPartialFile) {
  Apply("upload", "{memory: 128Mi, ephemeral-storage: 32Mi}", "exec sleep 3600");
  const std::string id = WaitRunning("upload");
  ASSERT_FALSE(id.empty());
  // envd is reached inside the sandbox's network namespace, as the gateway does, with the
  // sandbox's access token (sealed on its object with the install's key).
  auto box = base::SealedBox::LoadOrCreate(server_->data_dir() + "/auth/seal.key");
  ASSERT_TRUE(box.ok()) << box.status();
  auto object = server_->http().Do(
      {.target = "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes/upload"});
  ASSERT_TRUE(object.ok() && object->status == 200);
  auto sandbox = api::ObjectFromJson(*api::ParseJson(object->body));
  ASSERT_TRUE(sandbox.ok());
  auto token = api::SandboxSecrets(*box).AccessToken(*sandbox);
  ASSERT_TRUE(token.ok() && !token->empty()) << token.status();
  const std::string state_json = ReadFile(options_.runtime_state_dir + "/" + id + "/state.json");
  auto state = api::ParseJson(state_json);
  ASSERT_TRUE(state.ok()) << state_json;
  const int pid = state->value("pid", 0);
  ASSERT_GT(pid, 0) << state_json;
  auto fd = os::DialInNetnsOfPid(pid, node::kEnvdPort, 5s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  fcntl(fd->get(), F_SETFL, fcntl(fd->get(), F_GETFL) & ~O_NONBLOCK);  // plain blocking I/O

  const size_t body_size = 96 * kMi;
  const std::string head = fmt::format(
      "POST /files?path=/upload.bin HTTP/1.1\r\nHost: envd\r\nConnection: close\r\n"
      "Content-Type: application/octet-stream\r\nContent-Length: {}\r\n"
      "X-Access-Token: {}\r\n\r\n",
      body_size, *token);
  // The answer is read while the body goes out: envd answers as soon as the write fails and
  // closes after draining a little more, which resets a connection still sending.
  std::string response;
  std::thread reader([&response, sock = fd->get()] {
    char buf[4096];
    for (;;) {
      ssize_t n = recv(sock, buf, sizeof buf, 0);
      if (n <= 0) break;
      response.append(buf, static_cast<size_t>(n));
    }
  });
  ASSERT_EQ(send(fd->get(), head.data(), head.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(head.size()));
  const std::string chunk(kMi, 'u');
  for (size_t sent = 0; sent < body_size; sent += chunk.size()) {
    if (send(fd->get(), chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) break;
  }
  shutdown(fd->get(), SHUT_WR);
  reader.join();
  EXPECT_EQ(response.substr(0, 12), "HTTP/1.1 507")
      << response << "\nenvd: " << ReadFile(node::SandboxPaths::For(options_.root, id).envd_log);
  const std::string upper = node::SandboxPaths::For(options_.root, id).writable + "/upper";
  EXPECT_EQ(FileSize(upper + "/upload.bin"), -1) << "a partial upload was left behind";
}

// A node that cannot enforce ephemeral-storage (here: turned off) still serves, says so, and
// never runs a sandbox without the storage limit its template asked for.
class UnenforcedStorage : public StorageAttack {
 protected:
  void SetUp() override {
    enforce_ = false;
    StorageAttack::SetUp();
  }
};

TEST_F(UnenforcedStorage, TheServerSaysSoAndRefusesTemplatesThatNameIt) {
  net::ClientRequest req;
  req.target = "/readyz";
  auto ready = server_->http().Do(req);
  for (int i = 0; i < 100 && ready.ok() && ready->status != 200; ++i) {
    std::this_thread::sleep_for(100ms);
    ready = server_->http().Do(req);
  }
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body,
            "ok\nnode: ephemeral-storage is not enforced (turned off (WARREN_NODE_STORAGE=off)): "
            "sandboxes have no storage limit and templates that name one are refused");

  Apply("asks", "{memory: 64Mi, ephemeral-storage: 64Mi}", "exec sleep 3600");
  auto deadline = std::chrono::steady_clock::now() + 60s;
  api::Json obj;
  while (std::chrono::steady_clock::now() < deadline) {
    obj = Get("asks");
    if (Phase(obj) == "Failed") break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(Phase(obj), "Failed") << api::DumpJson(obj);
  EXPECT_TRUE(Contains(api::DumpJson(obj["status"]), "EphemeralStorageNotEnforced"))
      << api::DumpJson(obj["status"]);

  Apply("plain", "{memory: 64Mi}", "exec sleep 3600");
  EXPECT_FALSE(WaitRunning("plain").empty()) << "a template without the limit still runs";
}

}  // namespace
}  // namespace warren::security
