// NodeAgent::Reset: the real reset a recycled warm-pool member gets before it returns to its
// pool (controller/recycle_controller.h). Added by the pool work: see node_agent.h.

#include <fmt/format.h>

#include <filesystem>

#include "base/log.h"
#include "envd/init_channel.h"
#include "node/node_agent.h"
#include "node/reasons.h"

namespace warren::node {
namespace {

// Removes everything inside `dir` but keeps `dir` itself (its owner and mode: with a user
// namespace the writable layer belongs to the sandbox's root). Symlinks are removed, never
// followed.
Status EmptyDirectory(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(dir, ec))) return Status::Ok();
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code rm;
    std::filesystem::remove_all(entry.path(), rm);
    if (rm) return InternalError(fmt::format("empty {}: {}", dir, rm.message()));
  }
  if (ec) return InternalError(fmt::format("list {}: {}", dir, ec.message()));
  return Status::Ok();
}

}  // namespace

struct ResetRequest {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;  // guarded by mu
  Status result;      // guarded by mu
};

Status NodeAgent::Reset(std::string_view sandbox_id, std::chrono::milliseconds timeout) {
  auto request = std::make_shared<ResetRequest>();
  std::string key;
  Status here = NotFoundError(fmt::format("this node runs no sandbox {}", sandbox_id));
  locals_.With(sandbox_id, [&](Local& l) {
    if (l.state != runtime::SandboxState::kRunning) {
      here = FailedPreconditionError(fmt::format("sandbox {} is {}, not running", sandbox_id,
                                                 runtime::SandboxStateName(l.state)));
      return;
    }
    here = Status::Ok();
    l.reset = request;
    key = l.key;
  });
  RETURN_IF_ERROR(here);
  queue_.Add(key);
  std::unique_lock lock(request->mu);
  if (!request->cv.wait_for(lock, timeout, [&] { return request->done; })) {
    lock.unlock();
    locals_.With(sandbox_id, [&](Local& l) {
      if (l.reset == request) l.reset.reset();  // not started yet: withdrawn
    });
    return DeadlineExceededError(fmt::format("reset of sandbox {} did not finish within {} ms",
                                             sandbox_id, timeout.count()));
  }
  return request->result;
}

std::shared_ptr<ResetRequest> NodeAgent::TakeReset(const std::string& id) {
  std::shared_ptr<ResetRequest> taken;
  locals_.With(id, [&](Local& l) { taken = std::move(l.reset); });
  return taken;
}

NodeAgent::Next NodeAgent::DoReset(api::Object& obj, const std::string& id, ResetRequest& request) {
  auto log = base::Logger("node");
  auto finish = [&](Status s) {
    std::lock_guard lock(request.mu);
    request.done = true;
    request.result = std::move(s);
    request.cv.notify_all();
  };
  const auto started = clock_.Monotonic();
  (void)WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    st.phase = api::sandbox_phase::kRecycling;
    st.message = "reset for its pool: processes stopped, writable layer discarded";
    api::SetCondition(st.conditions,
                      {conditions::kReady, "False", "Recycling", "the sandbox is being reset"},
                      clock_.Now());
  });
  // StopProcesses waits for the exit to land, so it cannot mark the fresh pid 1 stopped.
  if (Status s = StopProcesses(id); !s.ok()) {
    finish(s.WithPrefix("stop"));
    return Next::kRetry;
  }
  const SandboxPaths paths = PathsFor(id);
  for (const std::string& dir :
       {paths.writable + "/upper", paths.writable + "/work", paths.volumes}) {
    if (Status s = EmptyDirectory(dir); !s.ok()) {
      finish(s);
      return Next::kRetry;
    }
  }
  // The envd started below must not take the previous user's /init from the channel. After the
  // emptying: a user who filled the sandbox's ephemeral-storage limit left no room to write.
  bool channel = false;
  locals_.With(id, [&](const Local& l) { channel = l.init_channel; });
  if (channel) {
    if (Status s = envd::WriteInitChannel(paths.init_dir, "", SandboxRootUid()); !s.ok()) {
      finish(s.WithPrefix("clear the init channel"));
      return Next::kRetry;
    }
  }
  Next next = StartAndWait(obj, id);
  bool ready = false;
  locals_.With(id, [&](const Local& l) { ready = l.ready; });
  if (ready) {
    log->info("sandbox reset id={} object={} ms={}", id, obj.Key(),
              std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Monotonic() - started)
                  .count());
    finish(Status::Ok());
  } else {
    finish(UnavailableError(fmt::format("sandbox {} did not come back ready after its reset", id)));
  }
  return next;
}

}  // namespace warren::node
