#include "envd/dir_watcher.h"

#include <dirent.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>

namespace warren::envd {
namespace {

constexpr uint32_t kMask = IN_CREATE | IN_MODIFY | IN_ATTRIB | IN_DELETE | IN_MOVED_FROM |
                           IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

bool IsNetworkOrFuse(long type) {
  switch (static_cast<unsigned long>(type)) {
    case 0x6969:      // NFS
    case 0xFF534D42:  // CIFS
    case 0x517B:      // SMB
    case 0xFE534D42:  // SMB2
    case 0x65735546:  // FUSE
      return true;
    default:
      return false;
  }
}

std::string Join(const std::string& rel, const std::string& name) {
  if (rel.empty()) return name;
  if (name.empty()) return rel;
  return rel + "/" + name;
}

}  // namespace

Result<std::unique_ptr<DirWatcher>> DirWatcher::Start(WatchOptions options,
                                                      const FilesystemOps& ops,
                                                      EventCallback on_event,
                                                      ErrorCallback on_error,
                                                      std::function<void()> on_started) {
  struct stat st;
  if (stat(options.path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return NotFoundError(fmt::format("path '{}' does not exist", options.path));
    }
    return ErrnoError(fmt::format("watch '{}'", options.path), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(fmt::format("path '{}' is not a directory", options.path));
  }
  if (!options.allow_network_mounts) {
    struct statfs fs;
    if (statfs(options.path.c_str(), &fs) == 0 && IsNetworkOrFuse(fs.f_type)) {
      return InvalidArgumentError(
          fmt::format("path '{}' is on a network or FUSE mount; set allowNetworkMounts to watch it",
                      options.path));
    }
  }
  ASSIGN_OR_RETURN(os::Inotify inotify, os::Inotify::Create());
  ASSIGN_OR_RETURN(int wd, inotify.AddWatch(options.path, kMask));
  std::unique_ptr<DirWatcher> w(new DirWatcher(std::move(options), ops, std::move(inotify),
                                               std::move(on_event), std::move(on_error)));
  if (!w->stop_) return ErrnoError("eventfd", errno);
  w->dirs_[wd] = "";
  if (w->options_.recursive) {
    // Subdirectories of the root (the root itself is watched already).
    DIR* d = opendir(w->options_.path.c_str());
    if (d) {
      std::vector<std::string> subdirs;
      while (dirent* e = readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != ".." && e->d_type == DT_DIR) subdirs.push_back(n);
      }
      closedir(d);
      for (const auto& s : subdirs) w->AddTree(s);
    }
  }
  if (on_started) on_started();
  DirWatcher* raw = w.get();
  w->thread_ = std::thread([raw] { raw->Run(); });
  return w;
}

DirWatcher::DirWatcher(WatchOptions options, const FilesystemOps& ops, os::Inotify inotify,
                       EventCallback on_event, ErrorCallback on_error)
    : options_(std::move(options)),
      ops_(ops),
      inotify_(std::move(inotify)),
      stop_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      on_event_(std::move(on_event)),
      on_error_(std::move(on_error)) {}

DirWatcher::~DirWatcher() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    ssize_t ignored = write(stop_.get(), &one, sizeof one);
    (void)ignored;
    thread_.join();
  }
}

void DirWatcher::AddTree(const std::string& rel) {
  const std::string abs = Join(options_.path, rel);
  auto wd = inotify_.AddWatch(abs, kMask);
  if (!wd.ok()) return;  // vanished or not a directory any more
  dirs_[*wd] = rel;
  DIR* d = opendir(abs.c_str());
  if (!d) return;
  std::vector<std::string> subdirs;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != ".." && e->d_type == DT_DIR) subdirs.push_back(n);
  }
  closedir(d);
  for (const auto& s : subdirs) AddTree(Join(rel, s));
}

void DirWatcher::Run() {
  for (;;) {
    pollfd fds[2] = {{inotify_.fd(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    int r = poll(fds, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      on_error_(ErrnoError("poll inotify", errno));
      return;
    }
    if (fds[1].revents) return;
    auto events = inotify_.ReadEvents();
    if (!events.ok()) {
      on_error_(events.status());
      return;
    }
    for (const auto& e : *events) {
      Handle(e);
      if (dirs_.empty()) {
        on_error_(NotFoundError(fmt::format("watched directory '{}' was removed", options_.path)));
        return;
      }
    }
  }
}

void DirWatcher::Handle(const os::InotifyEvent& e) {
  auto dir = dirs_.find(e.wd);
  if (dir == dirs_.end()) return;
  if (e.mask & IN_IGNORED) {
    dirs_.erase(dir);
    return;
  }
  // Self events of subdirectories are reported by their parent's watch already.
  if ((e.mask & (IN_DELETE_SELF | IN_MOVE_SELF)) && !dir->second.empty()) return;
  const std::string name = Join(dir->second, e.name);
  const bool is_dir = e.mask & IN_ISDIR;
  const bool new_dir = options_.recursive && is_dir && (e.mask & (IN_CREATE | IN_MOVED_TO));
  if (new_dir) AddTree(name);

  auto emit = [&](EventType type) {
    FilesystemEvent ev;
    ev.name = name;
    ev.type = type;
    if (options_.include_entry &&
        (type == EventType::kCreate || type == EventType::kWrite || type == EventType::kChmod)) {
      auto entry = ops_.Stat(Join(options_.path, name));
      if (entry.ok()) ev.entry = std::move(*entry);
    }
    on_event_(std::move(ev));
  };
  if (e.mask & (IN_CREATE | IN_MOVED_TO)) emit(EventType::kCreate);
  if (e.mask & (IN_MOVED_FROM | IN_MOVE_SELF)) emit(EventType::kRename);
  if (e.mask & IN_ATTRIB) emit(EventType::kChmod);
  if (e.mask & IN_MODIFY) emit(EventType::kWrite);
  if (e.mask & (IN_DELETE | IN_DELETE_SELF)) emit(EventType::kRemove);
  // What appeared inside a new directory before its watch was in place would go unreported:
  // report it as created (`mkdir -p a/b && touch a/b/c` is that fast).
  if (new_dir) ReportExisting(name);
}

void DirWatcher::ReportExisting(const std::string& rel) {
  DIR* d = opendir(Join(options_.path, rel).c_str());
  if (!d) return;
  std::vector<std::pair<std::string, bool>> children;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") children.emplace_back(n, e->d_type == DT_DIR);
  }
  closedir(d);
  for (const auto& [n, is_dir] : children) {
    FilesystemEvent ev;
    ev.name = Join(rel, n);
    ev.type = EventType::kCreate;
    if (options_.include_entry) {
      auto entry = ops_.Stat(Join(options_.path, ev.name));
      if (entry.ok()) ev.entry = std::move(*entry);
    }
    on_event_(std::move(ev));
    if (is_dir) ReportExisting(Join(rel, n));
  }
}

}  // namespace warren::envd
