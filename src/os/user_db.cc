#include "os/user_db.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/small_file.h"
#include "base/strings.h"

namespace warren::os {
namespace {

// A missing or unreadable user database is the machine's state, not the caller's mistake, so it
// is Unavailable whatever errno said. Read with read(2), not a file stream: a stream's first use
// in a process sets up the C++ locale, which envd would otherwise pay inside a claim's /init.
Result<std::string> ReadUserDbFile(const std::string& path) {
  auto text = base::ReadSmallFile(path, 64 << 20);
  if (!text.ok()) return UnavailableError(text.status().message());
  return text;
}

template <typename Fn>
void ForEachLine(std::string_view text, Fn fn) {
  for (std::string_view line : base::Split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    if (!fn(line)) return;
  }
}

}  // namespace

std::optional<UserInfo> ParsePasswdLine(std::string_view line) {
  auto f = base::Split(line, ':');
  if (f.size() != 7 || f[0].empty()) return std::nullopt;
  auto uid = base::ParseUint64(f[2]);
  auto gid = base::ParseUint64(f[3]);
  if (!uid || !gid || *uid > 0xfffffffeu || *gid > 0xfffffffeu) return std::nullopt;
  UserInfo u;
  u.name = std::string(f[0]);
  u.uid = static_cast<uid_t>(*uid);
  u.gid = static_cast<gid_t>(*gid);
  u.home = std::string(f[5]);
  u.shell = std::string(f[6]);
  return u;
}

std::optional<GroupEntry> ParseGroupLine(std::string_view line) {
  auto f = base::Split(line, ':');
  if (f.size() != 4 || f[0].empty()) return std::nullopt;
  auto gid = base::ParseUint64(f[2]);
  if (!gid || *gid > 0xfffffffeu) return std::nullopt;
  GroupEntry g;
  g.name = std::string(f[0]);
  g.gid = static_cast<gid_t>(*gid);
  for (auto m : base::SplitNonEmpty(f[3], ',')) g.members.emplace_back(m);
  return g;
}

Result<UserInfo> UserDb::Find(std::optional<std::string_view> name,
                              std::optional<uid_t> uid) const {
  ASSIGN_OR_RETURN(std::string passwd, ReadUserDbFile(passwd_path_));
  std::optional<UserInfo> found;
  ForEachLine(passwd, [&](std::string_view line) {
    auto u = ParsePasswdLine(line);
    if (!u) return true;
    if ((name && u->name == *name) || (uid && u->uid == *uid)) {
      found = std::move(u);
      return false;
    }
    return true;
  });
  if (!found) {
    return NotFoundError(name ? fmt::format("user '{}' not found", *name)
                              : fmt::format("uid {} not found", *uid));
  }
  found->groups.push_back(found->gid);
  // A missing /etc/group only means no supplementary groups.
  auto groups = ReadUserDbFile(group_path_);
  if (groups.ok()) {
    ForEachLine(*groups, [&](std::string_view line) {
      auto g = ParseGroupLine(line);
      if (g && g->gid != found->gid &&
          std::find(g->members.begin(), g->members.end(), found->name) != g->members.end() &&
          std::find(found->groups.begin(), found->groups.end(), g->gid) == found->groups.end()) {
        found->groups.push_back(g->gid);
      }
      return true;
    });
  }
  return *std::move(found);
}

Result<UserInfo> UserDb::LookupUser(std::string_view name) const { return Find(name, {}); }
Result<UserInfo> UserDb::LookupUid(uid_t uid) const { return Find({}, uid); }

std::string UserDb::UserName(uid_t uid) const {
  auto passwd = ReadUserDbFile(passwd_path_);
  std::string out = std::to_string(uid);
  if (!passwd.ok()) return out;
  ForEachLine(*passwd, [&](std::string_view line) {
    auto u = ParsePasswdLine(line);
    if (u && u->uid == uid) {
      out = u->name;
      return false;
    }
    return true;
  });
  return out;
}

std::string UserDb::GroupName(gid_t gid) const {
  auto groups = ReadUserDbFile(group_path_);
  std::string out = std::to_string(gid);
  if (!groups.ok()) return out;
  ForEachLine(*groups, [&](std::string_view line) {
    auto g = ParseGroupLine(line);
    if (g && g->gid == gid) {
      out = g->name;
      return false;
    }
    return true;
  });
  return out;
}

}  // namespace warren::os
