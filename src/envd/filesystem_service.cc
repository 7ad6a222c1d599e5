#include "envd/filesystem_service.h"

#include "envd/filesystem_messages.h"
#include "envd/paths.h"

namespace warren::envd {

Result<std::string> FilesystemService::Resolve(const std::string& path,
                                               const os::UserInfo& user) const {
  return ResolvePath(path, user, state_.default_workdir());
}

void FilesystemService::Register(net::Router& router, RpcAuth auth) {
  using User = const os::UserInfo&;
  using Body = const std::string&;
  AddUnaryMethod(router, "/filesystem.Filesystem/Stat", auth,
                 [this](Body b, User u) -> Result<std::string> {
                   ASSIGN_OR_RETURN(auto req, ParsePathRequest(b));
                   ASSIGN_OR_RETURN(auto path, Resolve(req.path, u));
                   ASSIGN_OR_RETURN(auto entry, ops_.Stat(path));
                   return EntryResponseJson(entry);
                 });
  AddUnaryMethod(router, "/filesystem.Filesystem/MakeDir", auth,
                 [this](Body b, User u) -> Result<std::string> {
                   ASSIGN_OR_RETURN(auto req, ParsePathRequest(b));
                   ASSIGN_OR_RETURN(auto path, Resolve(req.path, u));
                   ASSIGN_OR_RETURN(auto entry, ops_.MakeDir(path, u));
                   return EntryResponseJson(entry);
                 });
  AddUnaryMethod(
      router, "/filesystem.Filesystem/Move", auth, [this](Body b, User u) -> Result<std::string> {
        ASSIGN_OR_RETURN(auto req, ParseMoveRequest(b));
        ASSIGN_OR_RETURN(auto source, Resolve(req.source, u));
        ASSIGN_OR_RETURN(auto destination, Resolve(req.destination, u));
        ASSIGN_OR_RETURN(auto entry, ops_.Move(source, destination, u));
        if (audit_ != nullptr) {
          audit_->Record("file.move", {{"from", source}, {"path", destination}, {"user", u.name}});
        }
        return EntryResponseJson(entry);
      });
  AddUnaryMethod(router, "/filesystem.Filesystem/ListDir", auth,
                 [this](Body b, User u) -> Result<std::string> {
                   ASSIGN_OR_RETURN(auto req, ParseListDirRequest(b));
                   ASSIGN_OR_RETURN(auto path, Resolve(req.path, u));
                   ASSIGN_OR_RETURN(auto entries, ops_.ListDir(path, req.depth));
                   return ListDirResponseJson(entries);
                 });
  AddUnaryMethod(router, "/filesystem.Filesystem/Remove", auth,
                 [this](Body b, User u) -> Result<std::string> {
                   ASSIGN_OR_RETURN(auto req, ParsePathRequest(b));
                   ASSIGN_OR_RETURN(auto path, Resolve(req.path, u));
                   RETURN_IF_ERROR(ops_.Remove(path));
                   if (audit_ != nullptr)
                     audit_->Record("file.remove", {{"path", path}, {"user", u.name}});
                   return std::string("{}");
                 });
  AddStreamMethod(router, "/filesystem.Filesystem/WatchDir", auth,
                  [this](Body p, User u, const std::shared_ptr<MessageSink>& s, StreamOptions o) {
                    WatchDir(p, u, s, o);
                  });
  AddUnaryMethod(router, "/filesystem.Filesystem/CreateWatcher", auth,
                 [this](Body b, User u) -> Result<std::string> {
                   ASSIGN_OR_RETURN(auto options, WatchOptionsFrom(b, u));
                   ASSIGN_OR_RETURN(auto id, watchers_.CreatePolling(std::move(options)));
                   return CreateWatcherResponseJson(id);
                 });
  AddUnaryMethod(router, "/filesystem.Filesystem/GetWatcherEvents", auth,
                 [this](Body b, User) -> Result<std::string> {
                   ASSIGN_OR_RETURN(auto req, ParseWatcherIdRequest(b));
                   ASSIGN_OR_RETURN(auto events, watchers_.TakeEvents(req.watcher_id));
                   return WatcherEventsResponseJson(events);
                 });
  AddUnaryMethod(router, "/filesystem.Filesystem/RemoveWatcher", auth,
                 [this](Body b, User) -> Result<std::string> {
                   ASSIGN_OR_RETURN(auto req, ParseWatcherIdRequest(b));
                   RETURN_IF_ERROR(watchers_.RemovePolling(req.watcher_id));
                   return std::string("{}");
                 });
}

Result<WatchOptions> FilesystemService::WatchOptionsFrom(const std::string& body,
                                                         const os::UserInfo& user) const {
  ASSIGN_OR_RETURN(auto req, ParseWatchRequest(body));
  WatchOptions o;
  ASSIGN_OR_RETURN(o.path, Resolve(req.path, user));
  o.recursive = req.recursive;
  o.include_entry = req.include_entry;
  o.allow_network_mounts = req.allow_network_mounts;
  return o;
}

void FilesystemService::WatchDir(const std::string& payload, const os::UserInfo& user,
                                 const std::shared_ptr<MessageSink>& sink, StreamOptions options) {
  auto session = StreamSession::Create(sink, timers_, options, WatchKeepaliveJson());
  auto o = WatchOptionsFrom(payload, user);
  if (!o.ok()) return session->End(o.status());
  std::weak_ptr<StreamSession> weak = session;
  // `start` goes out once the watches are in place and before any event can.
  auto watcher = DirWatcher::Start(
      std::move(*o), ops_,
      [weak](FilesystemEvent ev) {
        if (auto s = weak.lock()) s->Send(WatchEventJson(ev));
      },
      [weak](Status st) {
        if (auto s = weak.lock()) s->End(st);
      },
      [session] { session->Send(WatchStartJson()); });
  if (!watcher.ok()) return session->End(watcher.status());
  const std::string id = watchers_.AddStream(std::move(*watcher));
  // The watcher's own thread may be the one ending the session, and stopping a watcher joins
  // that thread, so it is stopped from the timer thread.
  TimerQueue* timers = &timers_;
  WatcherRegistry* registry = &watchers_;
  session->OnEnd([timers, registry, id] {
    timers->ScheduleAfter(std::chrono::milliseconds(0),
                          [registry, id] { registry->RemoveStream(id); });
  });
  std::lock_guard lock(mu_);
  std::erase_if(watch_sessions_, [](const auto& s) { return s->ended(); });
  watch_sessions_.push_back(session);
}

void FilesystemService::EndWatchStreams(const Status& why) {
  std::vector<std::shared_ptr<StreamSession>> sessions;
  {
    std::lock_guard lock(mu_);
    sessions.swap(watch_sessions_);
  }
  for (const auto& s : sessions) s->End(why);
}

}  // namespace warren::envd
