#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/unique_fd.h"
#include "os/inotify.h"

namespace warren::os {

// One inotify instance shared by many short waits on files, each on a watch of its own.
//
// Closing an inotify instance waits for an SRCU grace period (fsnotify_destroy_group): 5–20 ms
// on these hosts, in the closing thread. Removing a watch from a live instance does not wait
// (the kernel frees the mark later, on its own worker). So a caller that waits on a new file
// several times a second — the node agent, for each sandbox's envd to say it listens — adds and
// removes watches here instead of making and closing an instance each time.
//
// Thread-safe. A thread of its own reads the instance and wakes the waits; the hub must outlive
// its watches.
class InotifyHub {
 public:
  // A watch on one path. Removed when destroyed (the last of several on the same file).
  class Watch {
   public:
    Watch(Watch&& other) noexcept;
    Watch& operator=(Watch&&) = delete;
    Watch(const Watch&) = delete;
    ~Watch();

    // Waits until an event arrived on the file since the last Wait (or since the watch was
    // added), at most `timeout`. True when one did. The file's removal counts as an event.
    bool Wait(std::chrono::microseconds timeout);

   private:
    friend class InotifyHub;
    Watch(InotifyHub* hub, int wd, uint64_t seen) : hub_(hub), wd_(wd), seen_(seen) {}
    InotifyHub* hub_;
    int wd_;
    uint64_t seen_;  // the file's event count this watch has taken
  };

  static Result<std::unique_ptr<InotifyHub>> Create();
  ~InotifyHub();
  InotifyHub(const InotifyHub&) = delete;
  InotifyHub& operator=(const InotifyHub&) = delete;

  // Watches `path` for the events in `mask` (added to whatever another watch of the same file
  // asked for). NotFound and the like name the path.
  Result<Watch> Add(const std::string& path, uint32_t mask);

  // Watches in place now (for tests: a removed watch leaves none behind).
  size_t watches() const;

 private:
  InotifyHub(Inotify inotify, base::UniqueFd stop);
  void Run();
  void Release(int wd);

  struct File {
    int watches = 0;      // Watch objects on this wd
    uint64_t events = 0;  // events seen on it so far
    bool gone = false;    // the kernel dropped the watch (the file was removed)
  };

  Inotify inotify_;
  base::UniqueFd stop_;  // eventfd that wakes the thread to stop
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<int, File> files_;  // by watch descriptor
  std::thread thread_;
};

}  // namespace warren::os
