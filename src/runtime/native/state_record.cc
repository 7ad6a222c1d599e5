#include "runtime/native/state_record.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/time_format.h"

namespace warren::runtime::native {
namespace {

using nlohmann::json;

constexpr int kVersion = 1;

std::optional<SandboxState> StateFromName(std::string_view s) {
  for (SandboxState st : {SandboxState::kCreated, SandboxState::kRunning, SandboxState::kPaused,
                          SandboxState::kStopped}) {
    if (SandboxStateName(st) == s) return st;
  }
  return std::nullopt;
}

std::string Time(base::WallTime t) {
  return t == base::WallTime{} ? std::string() : base::FormatRfc3339Nanos(t);
}

base::WallTime ParseTime(const json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_string()) return {};
  auto t = base::ParseRfc3339(j[key].get<std::string>());
  return t.value_or(base::WallTime{});
}

}  // namespace

std::string EncodeRecord(const SandboxRecord& r) {
  json spec;
  const SandboxSpec& s = r.spec;
  spec["id"] = s.id;
  spec["layers"] = s.layers;
  spec["writable_dir"] = s.writable_dir;
  spec["command"] = s.command;
  spec["env"] = s.env;
  spec["working_dir"] = s.working_dir;
  spec["user"] = {{"uid", s.user.uid}, {"gid", s.user.gid}, {"groups", s.user.supplementary_gids}};
  json mounts = json::array();
  for (const BindMount& m : s.mounts) {
    json mount = {{"source", m.source}, {"target", m.target}, {"read_only", m.read_only}};
    if (!m.sub_path.empty()) mount["sub_path"] = m.sub_path;
    mounts.push_back(std::move(mount));
  }
  spec["mounts"] = mounts;
  spec["resources"] = {{"cpu_millicores", s.resources.cpu_millicores},
                       {"memory_bytes", s.resources.memory_bytes},
                       {"pids", s.resources.pids}};
  spec["user_namespace"] = s.user_namespace;
  json rl = json::array();
  for (const os::Rlimit& l : s.rlimits) {
    rl.push_back({{"resource", l.resource}, {"soft", l.soft}, {"hard", l.hard}});
  }
  spec["rlimits"] = rl;
  spec["log_path"] = s.log_path;
  if (!s.restore_image.empty()) spec["restore_image"] = s.restore_image;
  spec["egress"] = s.egress;
  spec["egress_policy"] = sbnet::EgressPolicyToJson(s.egress_policy);

  json j;
  j["version"] = kVersion;
  j["spec"] = spec;
  j["state"] = SandboxStateName(r.state);
  j["pid"] = r.pid;
  j["start_time"] = r.start_time;
  j["boot_id"] = r.boot_id;
  j["cgroup_version"] = r.cgroup_version;
  j["created_writable_dir"] = r.created_writable_dir;
  j["created_at"] = Time(r.created_at);
  j["started_at"] = Time(r.started_at);
  j["oom_kills_at_start"] = r.oom_kills_at_start;
  if (!r.egress_address.empty()) {
    j["egress"] = {{"address", r.egress_address}, {"link", r.egress_link}};
  }
  if (r.last_exit) {
    j["last_exit"] = {{"exit_code", r.last_exit->exit_code},
                      {"signal", r.last_exit->signal},
                      {"oom_killed", r.last_exit->oom_killed},
                      {"unknown", r.last_exit->unknown}};
  }
  return j.dump(2);
}

Result<SandboxRecord> DecodeRecord(std::string_view text) {
  try {
    json j = json::parse(text);
    if (!j.is_object()) return DataLossError("state record is not a JSON object");
    if (j.value("version", 0) != kVersion) {
      return DataLossError(
          fmt::format("state record version {} is not {}", j.value("version", 0), kVersion));
    }
    SandboxRecord r;
    const json& s = j.at("spec");
    r.spec.id = s.at("id").get<std::string>();
    r.spec.layers = s.at("layers").get<std::vector<std::string>>();
    r.spec.writable_dir = s.at("writable_dir").get<std::string>();
    r.spec.command = s.at("command").get<std::vector<std::string>>();
    r.spec.env = s.value("env", std::vector<std::string>{});
    r.spec.working_dir = s.value("working_dir", std::string("/"));
    const json& u = s.at("user");
    r.spec.user.uid = u.at("uid").get<uint32_t>();
    r.spec.user.gid = u.at("gid").get<uint32_t>();
    r.spec.user.supplementary_gids = u.value("groups", std::vector<uint32_t>{});
    for (const json& m : s.value("mounts", json::array())) {
      r.spec.mounts.push_back(
          BindMount{m.at("source").get<std::string>(), m.at("target").get<std::string>(),
                    m.value("read_only", true), m.value("sub_path", std::string())});
    }
    const json& res = s.at("resources");
    r.spec.resources.cpu_millicores = res.value("cpu_millicores", int64_t{0});
    r.spec.resources.memory_bytes = res.value("memory_bytes", int64_t{0});
    r.spec.resources.pids = res.value("pids", int64_t{0});
    r.spec.user_namespace = s.value("user_namespace", false);
    for (const json& l : s.value("rlimits", json::array())) {
      r.spec.rlimits.push_back(os::Rlimit{l.at("resource").get<int>(), l.at("soft").get<uint64_t>(),
                                          l.at("hard").get<uint64_t>()});
    }
    r.spec.log_path = s.value("log_path", std::string());
    r.spec.restore_image = s.value("restore_image", std::string());
    r.spec.egress = s.value("egress", false);
    if (auto p = s.find("egress_policy"); p != s.end()) {
      auto policy = sbnet::EgressPolicyFromJson(*p);
      if (!policy.ok()) return DataLossError("state record: " + policy.status().message());
      r.spec.egress_policy = std::move(policy).value();
    }

    auto state = StateFromName(j.at("state").get<std::string>());
    if (!state) return DataLossError("state record has an unknown state");
    r.state = *state;
    r.pid = j.value("pid", 0);
    r.start_time = j.value("start_time", uint64_t{0});
    r.boot_id = j.value("boot_id", std::string());
    r.cgroup_version = j.value("cgroup_version", std::string());
    r.created_writable_dir = j.value("created_writable_dir", false);
    r.created_at = ParseTime(j, "created_at");
    r.started_at = ParseTime(j, "started_at");
    r.oom_kills_at_start = j.value("oom_kills_at_start", uint64_t{0});
    if (auto e = j.find("egress"); e != j.end()) {
      r.egress_address = e->value("address", std::string());
      r.egress_link = e->value("link", std::string());
    }
    if (j.contains("last_exit")) {
      const json& e = j["last_exit"];
      ExitStatus x;
      x.exit_code = e.value("exit_code", -1);
      x.signal = e.value("signal", 0);
      x.oom_killed = e.value("oom_killed", false);
      x.unknown = e.value("unknown", false);
      r.last_exit = x;
    }
    if (Status st = ValidateSpec(r.spec); !st.ok()) {
      return DataLossError("state record holds an invalid spec: " + st.message());
    }
    return r;
  } catch (const json::exception& e) {
    return DataLossError(fmt::format("state record is not valid: {}", e.what()));
  }
}

}  // namespace warren::runtime::native
