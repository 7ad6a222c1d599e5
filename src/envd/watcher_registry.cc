#include "envd/watcher_registry.h"

#include <fmt/format.h>

#include "base/ids.h"

namespace warren::envd {
namespace {

// A polling client that stops polling must not make envd hoard events without bound.
constexpr size_t kMaxBufferedEvents = 10000;

}  // namespace

std::string WatcherRegistry::AddStream(std::unique_ptr<DirWatcher> watcher) {
  std::string id = "s" + base::RandomAlnum(16);
  std::lock_guard lock(mu_);
  streams_[id] = std::move(watcher);
  return id;
}

void WatcherRegistry::RemoveStream(const std::string& id) {
  std::unique_ptr<DirWatcher> doomed;
  {
    std::lock_guard lock(mu_);
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    doomed = std::move(it->second);
    streams_.erase(it);
  }
  // Joins the watcher's thread outside the lock.
}

Result<std::string> WatcherRegistry::CreatePolling(WatchOptions options) {
  auto polling = std::make_shared<Polling>();
  std::weak_ptr<Polling> weak = polling;
  ASSIGN_OR_RETURN(polling->watcher, DirWatcher::Start(
                                         std::move(options), ops_,
                                         [weak](FilesystemEvent e) {
                                           auto p = weak.lock();
                                           if (!p) return;
                                           std::lock_guard lock(p->mu);
                                           if (p->events.size() >= kMaxBufferedEvents)
                                             p->events.erase(p->events.begin());
                                           p->events.push_back(std::move(e));
                                         },
                                         [weak](Status s) {
                                           auto p = weak.lock();
                                           if (!p) return;
                                           std::lock_guard lock(p->mu);
                                           p->error = std::move(s);
                                         }));
  std::string id = "w" + base::RandomAlnum(16);
  std::lock_guard lock(mu_);
  polling_[id] = std::move(polling);
  return id;
}

Result<std::vector<FilesystemEvent>> WatcherRegistry::TakeEvents(const std::string& id) {
  std::shared_ptr<Polling> p;
  {
    std::lock_guard lock(mu_);
    auto it = polling_.find(id);
    if (it == polling_.end()) return NotFoundError(fmt::format("watcher with id {} not found", id));
    p = it->second;
  }
  std::lock_guard lock(p->mu);
  if (p->error) return *p->error;
  std::vector<FilesystemEvent> out;
  out.swap(p->events);
  return out;
}

Status WatcherRegistry::RemovePolling(const std::string& id) {
  std::shared_ptr<Polling> doomed;
  {
    std::lock_guard lock(mu_);
    auto it = polling_.find(id);
    if (it == polling_.end()) return NotFoundError(fmt::format("watcher with id {} not found", id));
    doomed = std::move(it->second);
    polling_.erase(it);
  }
  return Status::Ok();
}

void WatcherRegistry::Clear() {
  std::map<std::string, std::unique_ptr<DirWatcher>> streams;
  std::map<std::string, std::shared_ptr<Polling>> polling;
  {
    std::lock_guard lock(mu_);
    streams.swap(streams_);
    polling.swap(polling_);
  }
}

size_t WatcherRegistry::size() const {
  std::lock_guard lock(mu_);
  return streams_.size() + polling_.size();
}

}  // namespace warren::envd
