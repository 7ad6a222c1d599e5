#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// Who the child runs as. Applied in the child, before exec: setgroups, setgid, setuid.
struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

struct SpawnOptions {
  // argv[0] is the program: a path, or a name searched in the PATH of `env`.
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value"
  std::string cwd;               // empty = inherit
  std::optional<Credentials> credentials;
  // Without a pty: stdin is a pipe when `stdin_pipe`, else /dev/null; stdout and stderr are
  // separate pipes. With `pty_slave` >= 0, the slave is stdin, stdout and stderr and becomes the
  // controlling terminal of the child's new session.
  bool stdin_pipe = true;
  int pty_slave = -1;
  // The child leads a new session (and so a new process group whose id is its pid), so the
  // whole group can be signalled at once.
  bool new_session = true;
};

// A started child. The pipes are the parent's ends, close-on-exec; with a pty they are empty.
struct SpawnedChild {
  pid_t pid = -1;
  base::UniqueFd stdin_w;
  base::UniqueFd stdout_r;
  base::UniqueFd stderr_r;
};

// Starts the child with clone(CLONE_VM|CLONE_VFORK) and execs, as posix_spawn does, so the cost
// does not grow with the caller's memory or threads. Everything the child needs is prepared
// before, and the child reports a failed step back in memory it shares with us until it execs,
// so a missing program, a bad cwd or a failed setuid comes back as an error naming the step
// instead of a child that exits 127.
// The caller must arrange for the child to be reaped (see ChildReaper). Thread-safe.
Result<SpawnedChild> Spawn(const SpawnOptions& options);

// Resolves `program` the way execvp would, with the PATH from `env` (or a default PATH).
// NotFound when no executable file matches.
Result<std::string> ResolveProgram(const std::string& program, const std::vector<std::string>& env);

}  // namespace warren::os
