#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/unique_fd.h"
#include "envd/filesystem_messages.h"
#include "envd/filesystem_ops.h"
#include "os/inotify.h"

namespace warren::envd {

struct WatchOptions {
  std::string path;  // absolute, resolved
  bool recursive = false;
  bool include_entry = false;
  bool allow_network_mounts = false;
};

// Watches a directory with inotify (recursively: every subdirectory, including ones created
// later) and reports E2B filesystem events with names relative to the watched directory, one
// event per operation in the order CREATE, RENAME, CHMOD, WRITE, REMOVE (the mapping Go's
// fsnotify uses, which E2B's envd is built on). Callbacks run on the watcher's own thread.
// Owned by one stream or one polling watcher; the destructor stops and joins the thread.
class DirWatcher {
 public:
  using EventCallback = std::function<void(FilesystemEvent)>;
  using ErrorCallback = std::function<void(Status)>;

  // Validates like E2B (NotFound: no such path; InvalidArgument: not a directory, or a network
  // or FUSE mount without allow_network_mounts) and starts watching. `on_started` (optional)
  // runs once the watches are in place and before any event can be reported.
  static Result<std::unique_ptr<DirWatcher>> Start(WatchOptions options, const FilesystemOps& ops,
                                                   EventCallback on_event, ErrorCallback on_error,
                                                   std::function<void()> on_started = {});
  ~DirWatcher();
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;

 private:
  DirWatcher(WatchOptions options, const FilesystemOps& ops, os::Inotify inotify,
             EventCallback on_event, ErrorCallback on_error);
  // Adds watches for `rel` (relative to the root, "" = root) and, when recursive, below it.
  void AddTree(const std::string& rel);
  void Run();
  void Handle(const os::InotifyEvent& e);
  // Reports everything already inside a directory that was just created (recursively).
  void ReportExisting(const std::string& rel);

  const WatchOptions options_;
  const FilesystemOps& ops_;
  os::Inotify inotify_;
  base::UniqueFd stop_;  // eventfd that wakes the thread to stop
  EventCallback on_event_;
  ErrorCallback on_error_;
  std::map<int, std::string> dirs_;  // wd → relative dir; touched only by the thread after Start
  std::thread thread_;
};

}  // namespace warren::envd
