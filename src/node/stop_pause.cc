// A pause that keeps only the file system (spec.pauseStrategy.type Stop; E2B's
// pause({keepMemory: false})): every process ends, the writable layer stays, and resuming boots
// the sandbox again on the same files, envd's /init replayed (the same access token). The
// stopped state is told from an exit by the phase: a sandbox stopped while its status says
// Paused was stopped by us. See node_agent.h.

#include <fmt/format.h>

#include <thread>

#include "base/log.h"
#include "node/node_agent.h"
#include "node/reasons.h"
#include "node/sandbox_object.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;
namespace phase = api::sandbox_phase;

constexpr auto kStopGrace = 2s;

auto Log() { return base::Logger("node"); }

}  // namespace

NodeAgent::Next NodeAgent::PauseByStopping(api::Object& obj, const std::string& id) {
  // Paused first: the exit the stop causes then reads as this pause, even after a crash here.
  const base::WallTime now = clock_.Now();
  const std::string message = "paused, file system only: its processes ended, its files are kept";
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    st.phase = phase::kPaused;
    st.message = message;
    api::SetCondition(st.conditions,
                      {conditions::kSandboxPaused, "True", reasons::kStopPaused, message}, now);
    api::SetCondition(st.conditions,
                      {conditions::kReady, "False", "SandboxPaused", "the sandbox is paused"}, now);
    NoteAutoPaused(st, id, now);
  });
  if (!s.ok()) return AfterWriteError(s);
  prober_->Forget(id);  // its processes end; the boot that resumes it starts probes afresh
  locals_.With(id, [](Local& l) { l.probes_tracked = false; });
  if (Status st = StopProcesses(id); !st.ok()) {
    events_->Warning(obj, reasons::kPauseFailed, st.message());
    return Next::kRetry;
  }
  Log()->info("sandbox paused (file system only) id={} object={}", id, obj.Key());
  return Next::kDone;
}

Status NodeAgent::StopProcesses(const std::string& id) {
  RETURN_IF_ERROR(runtime_->Stop(id, kStopGrace));
  // The reaper reports the exit on its own thread; let it land so it cannot mark a later
  // start stopped.
  for (int i = 0; i < 200; ++i) {
    bool running = false;
    locals_.With(id, [&](const Local& l) { running = l.state != runtime::SandboxState::kStopped; });
    if (!running) break;
    std::this_thread::sleep_for(5ms);
  }
  NoteFrozenOrThawed(id, runtime::SandboxState::kStopped);
  return Status::Ok();
}

NodeAgent::Next NodeAgent::RebootFrozen(api::Object& obj, const std::string& id) {
  if (Status st = StopProcesses(id); !st.ok()) {
    events_->Warning(obj, reasons::kResumeFailed, st.message());
    return Next::kRetry;
  }
  Log()->info("sandbox resuming without its memory (reboot) id={} object={}", id, obj.Key());
  return ReconcileStoppedPause(obj, id);
}

NodeAgent::Next NodeAgent::ReconcileStoppedPause(api::Object& obj, const std::string& id) {
  NoteFrozenOrThawed(id, runtime::SandboxState::kStopped);
  if (SpecPaused(obj)) return Next::kDone;
  const base::WallTime now = clock_.Now();
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    st.phase = phase::kResuming;
    st.message.clear();
    api::SetCondition(st.conditions,
                      {conditions::kReady, "False", reasons::kResuming,
                       "booting the sandbox again on its file system"},
                      now);
  });
  if (!s.ok()) return AfterWriteError(s);
  Log()->info("sandbox resuming (boot on its files) id={} object={}", id, obj.Key());
  return StartAndWait(obj, id);
}

}  // namespace warren::node
