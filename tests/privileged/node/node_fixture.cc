#include "node_fixture.h"

#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "api/json.h"
#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/event.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "api/yaml_codec.h"
#include "base/encoding.h"
#include "image/image_store.h"
#include "os/cgroup.h"
#include "runtime/native/native_runtime.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;

bool PathExists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

std::vector<std::string> CgroupDirs(const NodeAgentOptions& options, const std::string& id) {
  auto h = os::CgroupHierarchies::Detect();
  if (!h.ok()) return {};
  return h->DirsFor(options.cgroup_parent + "/" + id);
}

}  // namespace

Leftovers LeftoversOf(const NodeAgentOptions& options, const std::string& id, int pid,
                      const std::string& uid) {
  Leftovers l;
  std::ifstream mounts("/proc/self/mountinfo");
  std::string line;
  const std::string sandbox_state = options.runtime_state_dir + "/" + id;
  // The agent's sandbox storage (one btrfs for all its sandboxes) is mounted there while the
  // agent runs; a mount of this sandbox's own would name its directory below it.
  const std::string storage = " " + SandboxPaths::SandboxesDir(options.root) + " ";
  while (std::getline(mounts, line)) {
    if (line.find(storage) != std::string::npos) continue;
    if (line.find(options.root) != std::string::npos ||
        line.find(sandbox_state) != std::string::npos) {
      l.items.push_back("mount " + line);
    }
  }
  for (const auto& d : CgroupDirs(options, id)) {
    if (PathExists(d)) l.items.push_back("cgroup " + d);
  }
  if (PathExists(sandbox_state)) l.items.push_back("runtime state " + sandbox_state);
  const std::string dir = SandboxPaths::For(options.root, id).dir;
  if (PathExists(dir)) l.items.push_back("sandbox dir " + dir);
  if (pid > 0 && kill(pid, 0) == 0) {
    // A zombie is dead (after a server restart pid 1 is not the server's child; the machine's
    // init reaps it when it gets to it). A live one is a leak (pid reuse within a test run is
    // not a concern at this rate).
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto paren = text.rfind(')');
    const bool zombie = paren != std::string::npos && paren + 2 < text.size() &&
                        (text[paren + 2] == 'Z' || text[paren + 2] == 'X');
    if (!zombie) l.items.push_back("process " + std::to_string(pid));
  }
  if (!uid.empty()) {
    auto images = image::ImageStore::Open({.root = options.image_root});
    if (images.ok()) {
      for (const auto& lease : (*images)->ListLeases()) {
        if (lease.id.size() >= uid.size() &&
            lease.id.compare(lease.id.size() - uid.size(), uid.size(), uid) == 0) {
          l.items.push_back("image lease " + lease.id);
        }
      }
    }
  }
  return l;
}

std::string RawHttp(int fd, const std::string& request) {
  size_t off = 0;
  while (off < request.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 5000) <= 0) return "";
    ssize_t n = write(fd, request.data() + off, request.size() - off);
    if (n <= 0) return "";
    off += static_cast<size_t>(n);
  }
  std::string out;
  char buf[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) break;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::vector<int> SandboxPids(const NodeAgentOptions& options, const std::string& id) {
  std::vector<int> pids;
  for (const auto& d : CgroupDirs(options, id)) {
    std::ifstream procs(d + "/cgroup.procs");
    int pid;
    while (procs >> pid) pids.push_back(pid);
    if (!pids.empty()) break;
  }
  return pids;
}

std::string FreezerState(const NodeAgentOptions& options, const std::string& id) {
  for (const auto& d : CgroupDirs(options, id)) {
    std::ifstream f(d + "/freezer.state");
    std::string s;
    if (f >> s) return s;
  }
  return "";
}

void NodeTest::SetUp() {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (namespaces, cgroups, mounts)";
  dir_ = std::make_unique<store::testing::TempDir>();
  chmod(dir_->path().c_str(), 0711);
  data_dir_ = dir_->path() + "/data";
  mkdir(data_dir_.c_str(), 0711);
  store_ = std::make_unique<store::testing::TempStore>();
}

void NodeTest::TearDown() {
  if (!dir_) return;
  StopAgent();
  // Whatever a failed test left: destroy it with a runtime on the same state dir.
  NodeAgentOptions o = Options();
  runtime::native::NativeRuntimeOptions ro;
  ro.state_dir = o.runtime_state_dir;
  ro.cgroup_parent = o.cgroup_parent;
  if (auto rt = runtime::native::NativeRuntime::Create(ro); rt.ok()) {
    if (auto report = (*rt)->Adopt(); report.ok()) {
      for (const auto& info : report->adopted) {
        ADD_FAILURE() << "sandbox left running: " << info.id;
        (void)(*rt)->Destroy(info.id);
      }
      for (const auto& orphan : report->orphans) (void)(*rt)->RemoveOrphan(orphan);
    }
    auto dirs = (*rt)->cgroups().DirsFor(o.cgroup_parent);
    rt->reset();
    for (const auto& d : dirs) rmdir(d.c_str());
  }
  rmdir((o.runtime_state_dir + "/.idmap").c_str());
  rmdir(o.runtime_state_dir.c_str());
  // The agent keeps its sandbox storage mounted while sandboxes run; with none left it is
  // unmounted here (its loop device detaches itself), before the data dir goes.
  umount2(SandboxPaths::SandboxesDir(o.root).c_str(), MNT_DETACH);
  // Leases this test's agent took.
  if (auto images = image::ImageStore::Open({.root = o.image_root}); images.ok()) {
    const std::string prefix = "sandbox:" + base::Sha256Hex(o.root).substr(0, 12) + ":";
    for (const auto& lease : (*images)->ListLeases()) {
      if (lease.id.rfind(prefix, 0) == 0) (void)(*images)->ReleaseLease(lease.id);
    }
  }
  store_.reset();
}

NodeAgentOptions NodeTest::Options() const {
  NodeAgentOptions o = NodeAgentOptions::ForDataDir(data_dir_);
  o.envd_path = WARREN_ENVD_BIN;
  o.envd_gvisor_path = FindEnvdGvisorBinary(o.envd_path);
  o.node_name = "test-node";
  o.stats_interval = 200ms;
  o.restart_backoff_base = 300ms;
  o.restart_backoff_max = 2s;
  o.retry_base = 50ms;
  o.retry_max = 1s;
  o.ready_timeout = 20s;
  static const api::SandboxSecrets secrets = api::SandboxSecrets::ForTesting();
  o.secrets = &secrets;
  return o;
}

void NodeTest::StartAgent() {
  agent_ = std::make_unique<NodeAgent>(store_->store(), Options());
  ASSERT_OK(agent_->Start());
}

void NodeTest::StopAgent() {
  if (agent_) agent_->Stop();
  agent_.reset();
}

std::string NodeTest::SandboxYaml(const std::string& name, const std::string& image,
                                  const std::string& command, const std::string& limits,
                                  const std::string& restart_policy,
                                  const std::string& extra_spec) {
  std::ostringstream y;
  y << "apiVersion: agents.kruise.io/v1alpha1\nkind: Sandbox\n"
    << "metadata: {name: " << name << ", namespace: default}\n"
    << "spec:\n"
    << extra_spec << "  template:\n    spec:\n      restartPolicy: " << restart_policy << "\n"
    << "      containers:\n      - name: main\n        image: " << image << "\n";
  if (!command.empty()) y << "        command: " << command << "\n";
  if (!limits.empty()) y << "        resources: {limits: " << limits << "}\n";
  return y.str();
}

api::Object NodeTest::Apply(const std::string& yaml) {
  auto doc = api::ParseYaml(yaml);
  EXPECT_TRUE(doc.ok()) << doc.status();
  auto obj = api::ObjectFromJson(*doc);
  EXPECT_TRUE(obj.ok()) << obj.status();
  auto created = store_->store().Create(*obj);
  EXPECT_TRUE(created.ok()) << created.status();
  return created.ok() ? *created : api::Object{};
}

api::Object NodeTest::Get(const std::string& name) {
  auto obj = store_->store().Get(api::SandboxKind(), "default", name);
  return obj.ok() ? *obj : api::Object{};
}

bool NodeTest::Exists(const std::string& name) {
  return store_->store().Get(api::SandboxKind(), "default", name).ok();
}

api::Object NodeTest::WaitFor(const std::string& name,
                              const std::function<bool(const api::Object&)>& pred,
                              const std::string& what, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  api::Object last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto obj = store_->store().Get(api::SandboxKind(), "default", name);
    if (obj.ok()) {
      last = *obj;
      if (pred(last)) return last;
    }
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "sandbox " << name << ": timed out waiting for " << what
                << "; last status: " << api::DumpJson(last.status());
  return last;
}

api::Object NodeTest::WaitPhase(const std::string& name, const std::string& phase,
                                std::chrono::seconds timeout) {
  return WaitFor(
      name,
      [&](const api::Object& o) {
        if (Phase(o) != phase) return false;
        if (phase == api::sandbox_phase::kRunning) return ConditionStatus(o, "Ready") == "True";
        return true;
      },
      "phase " + phase, timeout);
}

void NodeTest::WaitGone(const std::string& name, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!Exists(name)) return;
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "sandbox " << name << " still exists: " << api::DumpJson(Get(name).status());
}

void NodeTest::Patch(const std::string& name, const std::string& merge_patch_json) {
  auto patch = api::ParseJson(merge_patch_json);
  ASSERT_TRUE(patch.ok()) << patch.status();
  auto r = store_->store().Patch(api::SandboxKind(), "default", name, *patch);
  ASSERT_TRUE(r.ok()) << r.status();
}

void NodeTest::Delete(const std::string& name) {
  auto r = store_->store().Delete(api::SandboxKind(), "default", name);
  ASSERT_TRUE(r.ok()) << r.status();
}

std::vector<std::string> NodeTest::EventsOf(const std::string& name) {
  std::vector<std::string> out;
  auto list = store_->store().List(api::EventKind(), {.namespace_ = "default"});
  if (!list.ok()) return out;
  for (const auto& ev : list->items) {
    auto f = api::DecodeTyped<api::EventFields>(ev.body, "");
    if (!f.ok() || f->involved_object.name != name) continue;
    out.push_back(f->reason + ": " + f->message);
  }
  return out;
}

std::string NodeTest::WaitEvent(const std::string& name, const std::string& reason,
                                std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& e : EventsOf(name)) {
      if (e.rfind(reason + ": ", 0) == 0) return e;
    }
    std::this_thread::sleep_for(20ms);
  }
  std::string all;
  for (const auto& e : EventsOf(name)) all += "\n  " + e;
  ADD_FAILURE() << "no " << reason << " Event about " << name << "; events:" << all;
  return "";
}

std::string NodeTest::Phase(const api::Object& obj) {
  auto s = api::DecodeStatus<api::SandboxStatus>(obj);
  return s.ok() ? s->phase : "";
}

std::string NodeTest::ConditionReason(const api::Object& obj, const std::string& type) {
  auto s = api::DecodeStatus<api::SandboxStatus>(obj);
  if (!s.ok()) return "";
  const api::Condition* c = api::FindCondition(s->conditions, type);
  return c ? c->reason : "";
}

std::string NodeTest::ConditionStatus(const api::Object& obj, const std::string& type) {
  auto s = api::DecodeStatus<api::SandboxStatus>(obj);
  if (!s.ok()) return "";
  const api::Condition* c = api::FindCondition(s->conditions, type);
  return c ? c->status : "";
}

std::string NodeTest::SandboxId(const api::Object& obj) {
  auto it = obj.metadata.labels.find(api::labels::kSandboxId);
  return it == obj.metadata.labels.end() ? "" : it->second;
}

}  // namespace warren::node::testing
