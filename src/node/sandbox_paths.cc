#include "node/sandbox_paths.h"

namespace warren::node {

std::string SandboxPaths::SandboxesDir(const std::string& root) { return root + "/sandboxes"; }

std::string SandboxPaths::VolumesDir(const std::string& root) {
  return SandboxesDir(root) + "/" + kVolumesDirName;
}

SandboxPaths SandboxPaths::For(const std::string& root, const std::string& sandbox_id) {
  SandboxPaths p;
  p.dir = SandboxesDir(root) + "/" + sandbox_id;
  p.owner = p.dir + "/owner.json";
  p.writable = p.dir + "/rootfs";
  p.log_dir = p.dir + "/log";
  p.command_log = p.log_dir + "/" + kCommandLogName;
  p.envd_log = p.dir + "/envd.log";
  p.volumes = p.dir + "/volumes";
  p.init_dir = p.dir + "/init";
  return p;
}

}  // namespace warren::node
