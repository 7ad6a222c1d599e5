#include "node/options.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "api/quantity.h"
#include "base/encoding.h"
#include "base/log.h"
#include "image/builtin_images.h"

namespace warren::node {
namespace {

constexpr char kDefaultDataDir[] = "/var/lib/warren";
constexpr char kRuntimeStateTmpfs[] = "/run/warren";

std::string Env(const char* name) {
  const char* v = getenv(name);
  return v ? std::string(v) : std::string();
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  if (ec) return path;
  return abs.lexically_normal().string();
}

// A byte quantity from the environment ("10Gi"); `fallback` when unset, unparsable or not
// positive (said in the log: a typo must not silently change a limit).
int64_t BytesFromEnv(const char* name, int64_t fallback) {
  std::string v = Env(name);
  if (v.empty()) return fallback;
  auto q = api::Quantity::Parse(v);
  if (!q.ok() || q->Value() <= 0) {
    base::Logger("node")->warn("ignoring {}=\"{}\": not a positive quantity such as 10Gi", name, v);
    return fallback;
  }
  return q->Value();
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

NodeAgentOptions NodeAgentOptions::ForDataDir(const std::string& data_dir) {
  NodeAgentOptions o;
  std::string abs = AbsolutePath(data_dir);
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
  o.root = abs + "/node";
  if (abs == kDefaultDataDir) {
    o.runtime_state_dir = std::string(kRuntimeStateTmpfs) + "/sandboxes";
    o.cgroup_parent = "warren";
  } else {
    std::string hash = base::Sha256Hex(abs).substr(0, 12);
    o.runtime_state_dir = std::string(kRuntimeStateTmpfs) + "/" + hash;
    o.cgroup_parent = "warren-" + hash;
  }
  o.runtime_state_tmpfs = kRuntimeStateTmpfs;
  if (auto v = Env("WARREN_NODE_STATE_TMPFS"); v == "off" || v == "0") o.runtime_state_tmpfs = "";
  o.image_root = "/var/lib/warren/images";
  o.image_cache_dir = image::DefaultImageCacheDir();
  o.envd_path = FindEnvdBinary();
  o.gvisor_init_path = FindGvisorInitBinary();
  o.envd_gvisor_path = FindEnvdGvisorBinary(o.envd_path);
  if (auto v = Env("WARREN_NODE_ENVD_STAGE"); v == "off" || v == "0") o.stage_envd = false;
  if (auto v = Env("WARREN_NODE_GVISOR"); v == "off" || v == "0") o.gvisor = false;
  if (auto v = Env("WARREN_RUNSC_PATH"); !v.empty()) o.runsc_path = v;
  o.node_name = HostName();
  if (auto v = Env("WARREN_NODE_NAME"); !v.empty()) o.node_name = v;
  if (auto v = Env("WARREN_NODE_AGENT"); v == "off" || v == "0") o.enabled = false;
  if (auto v = Env("WARREN_NODE_DESTROY_ON_STOP"); v == "1" || v == "true") {
    o.destroy_on_stop = true;
  }
  if (auto v = Env("WARREN_NODE_USERNS"); !v.empty()) o.user_namespace = v != "0";
  if (auto v = Env("WARREN_IMAGE_ROOT"); !v.empty()) o.image_root = v;
  if (auto v = Env("WARREN_NODE_STORAGE"); v == "off" || v == "0") o.storage.enforce = false;
  o.storage.image_bytes = BytesFromEnv("WARREN_NODE_STORAGE_SIZE", o.storage.image_bytes);
  o.defaults.ephemeral_storage_bytes =
      BytesFromEnv("WARREN_NODE_EPHEMERAL_STORAGE", o.defaults.ephemeral_storage_bytes);
  return o;
}

namespace {

// `name` beside the running binary, else in the build tree's apps/<name>/.
std::string FindBesideSelf(const std::string& name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "/usr/local/bin/" + name;
  auto dir = self.parent_path();
  std::vector<std::filesystem::path> candidates = {
      dir / name,
      dir.parent_path() / name / name,  // the build tree: apps/<binary>/
  };
  for (const auto& c : candidates) {
    if (std::filesystem::is_regular_file(c, ec)) return c.string();
  }
  return candidates.front().string();
}

}  // namespace

std::string FindEnvdBinary() {
  if (auto v = Env("WARREN_ENVD_PATH"); !v.empty()) return v;
  return FindBesideSelf("warren-envd");
}

std::string FindGvisorInitBinary() {
  if (auto v = Env("WARREN_GVISOR_INIT_PATH"); !v.empty()) return v;
  return FindBesideSelf("warren-gvisor-init");
}

std::string FindEnvdGvisorBinary(const std::string& envd_path) {
  if (auto v = Env("WARREN_ENVD_GVISOR_PATH"); !v.empty()) return v;
  return (std::filesystem::path(envd_path).parent_path() / "warren-envd-gvisor").string();
}

}  // namespace warren::node
