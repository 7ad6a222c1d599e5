#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace warren::os {

// One account from /etc/passwd, with its supplementary groups from /etc/group.
struct UserInfo {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
  std::string shell;
  std::vector<gid_t> groups;  // supplementary groups (the primary gid included first)
};

// Reads /etc/passwd and /etc/group directly, without NSS: warren-envd is a static binary, where
// getpwnam() and getgrnam() cannot load NSS modules. Files are re-read on every lookup (they are
// small, and a template or a user may add accounts at any time). Thread-safe (stateless apart
// from the two paths).
class UserDb {
 public:
  explicit UserDb(std::string passwd_path = "/etc/passwd", std::string group_path = "/etc/group")
      : passwd_path_(std::move(passwd_path)), group_path_(std::move(group_path)) {}

  // NotFound when no such user; Unavailable when /etc/passwd cannot be read.
  Result<UserInfo> LookupUser(std::string_view name) const;
  Result<UserInfo> LookupUid(uid_t uid) const;

  // Names for EntryInfo.owner / group; the number as text when there is no such entry.
  std::string UserName(uid_t uid) const;
  std::string GroupName(gid_t gid) const;

 private:
  Result<UserInfo> Find(std::optional<std::string_view> name, std::optional<uid_t> uid) const;

  std::string passwd_path_;
  std::string group_path_;
};

// Parsers for one line of each file, exposed for tests and fuzzing. nullopt for a malformed line.
struct GroupEntry {
  std::string name;
  gid_t gid = 0;
  std::vector<std::string> members;
};
std::optional<UserInfo> ParsePasswdLine(std::string_view line);
std::optional<GroupEntry> ParseGroupLine(std::string_view line);

}  // namespace warren::os
