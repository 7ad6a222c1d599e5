#include "node/checkpoint_agent.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/checkpoint.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "base/log.h"
#include "base/time_format.h"
#include "node/memory_image.h"
#include "node/node_agent.h"
#include "runtime/native/dir_tree.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kImagePrefix = "snapshot/";
constexpr auto kCaptureTimeout = 10min;
constexpr const char* kNodeAnnotation = api::kCheckpointNodeAnnotation;

namespace phase {
constexpr const char* kCreating = "Creating";
constexpr const char* kSucceeded = "Succeeded";
constexpr const char* kFailed = "Failed";
}  // namespace phase

auto Log() { return base::Logger("checkpoint"); }

bool Finished(const std::string& p) { return p == phase::kSucceeded || p == phase::kFailed; }

std::string Annotation(const api::Object& obj, const char* key) {
  auto it = obj.metadata.annotations.find(key);
  return it == obj.metadata.annotations.end() ? std::string() : it->second;
}

}  // namespace

std::string CheckpointImageName(const std::string& checkpoint_uid) {
  return std::string(kImagePrefix) + checkpoint_uid;
}

bool IsCheckpointImageName(std::string_view image) { return image.starts_with(kImagePrefix); }

CheckpointAgent::CheckpointAgent(store::Store& store, NodeAgent& agent, base::Clock& clock)
    : store_(store),
      agent_(agent),
      clock_(clock),
      events_(store, clock, "warren-node", agent.options().node_name),
      queue_(clock),
      watch_(store, api::CheckpointKind(), [this](const std::string& key) { queue_.Add(key); }) {}

CheckpointAgent::~CheckpointAgent() { Stop(); }

void CheckpointAgent::Start() {
  watch_.Start();
  worker_ = std::thread([this] { WorkerLoop(); });
}

void CheckpointAgent::Stop() {
  if (stopping_.exchange(true)) return;
  watch_.Stop();
  queue_.Shutdown();
  if (worker_.joinable()) worker_.join();
}

void CheckpointAgent::WorkerLoop() {
  while (auto key = queue_.Get()) {
    auto again = Reconcile(*key);
    queue_.Done(*key);
    if (again.count() > 0) queue_.AddAfter(*key, again);
  }
}

std::chrono::milliseconds CheckpointAgent::Reconcile(const std::string& key) {
  auto [ns, name] = api::SplitKey(key);
  auto obj = store_.Get(api::CheckpointKind(), ns, name);
  if (!obj.ok()) return obj.status().code() == StatusCode::kNotFound ? 0ms : 1000ms;
  const std::string node = Annotation(*obj, kNodeAnnotation);
  if (!node.empty() && node != agent_.options().node_name) return 0ms;
  if (obj->metadata.deletion_timestamp) {
    capturing_.erase(obj->metadata.uid);
    return Delete(*obj).ok() ? 0ms : 1000ms;
  }
  auto status = api::DecodeStatus<api::CheckpointStatus>(*obj);
  if (status.ok() && Finished(status->phase)) {
    capturing_.erase(obj->metadata.uid);
    return Finish(*obj);
  }
  if (status.ok() && status->phase == phase::kCreating && !capturing_.contains(obj->metadata.uid) &&
      !Annotation(*obj, api::kCheckpointForRequestAnnotation).empty()) {
    const std::string msg =
        "the capture was cut short by a restart of the node agent, and the request it was made "
        "for ended with it; it is not made again";
    Log()->info("checkpoint abandoned object={}: {}", obj->Key(), msg);
    events_.Warning(*obj, "CheckpointFailed", msg);
    return WritePhase(*obj, phase::kFailed, msg).ok() ? Finish(*obj) : 1000ms;
  }
  return Capture(*obj);
}

std::chrono::milliseconds CheckpointAgent::Capture(api::Object& cp) {
  auto spec = api::DecodeSpec<api::CheckpointSpec>(cp);
  if (!spec.ok()) {
    return WritePhase(cp, phase::kFailed, spec.status().message()).ok() ? 0ms : 1000ms;
  }
  auto sandbox = store_.Get(api::SandboxKind(), cp.metadata.namespace_, spec->sandbox_name);
  if (!sandbox.ok()) {
    if (sandbox.status().code() != StatusCode::kNotFound) return 1000ms;
    const std::string msg =
        fmt::format("sandbox {}/{} not found", cp.metadata.namespace_, spec->sandbox_name);
    return WritePhase(cp, phase::kFailed, msg).ok() ? 0ms : 1000ms;
  }
  auto label = sandbox->metadata.labels.find(api::labels::kSandboxId);
  const std::string id = label == sandbox->metadata.labels.end() ? "" : label->second;
  auto here = agent_.Find(id);
  if (!here.ok() || here->uid != sandbox->metadata.uid) {
    auto st = api::DecodeStatus<api::SandboxStatus>(*sandbox);
    if (st.ok() && !st->node_name.empty() && st->node_name != agent_.options().node_name) {
      return 0ms;  // another node's sandbox: its agent takes the checkpoint
    }
    if (st.ok() &&
        (st->phase == api::sandbox_phase::kFailed || st->phase == api::sandbox_phase::kSucceeded)) {
      const std::string msg = fmt::format("sandbox {} has ended ({}); there is nothing to capture",
                                          spec->sandbox_name, st->phase);
      return WritePhase(cp, phase::kFailed, msg).ok() ? 0ms : 1000ms;
    }
    return 500ms;  // not made yet
  }
  const auto& contents = spec->persistent_contents;
  const bool memory = std::find(contents.begin(), contents.end(), "memory") != contents.end();
  if (memory && !agent_.runtime().SupportedState(id).memory) {
    const std::string msg = fmt::format(
        "persistentContents names memory, which the runtime of sandbox {} cannot keep (only its "
        "file system)",
        spec->sandbox_name);
    return WritePhase(cp, phase::kFailed, msg).ok() ? 0ms : 1000ms;
  }
  if (!cp.HasFinalizer(api::finalizers::kCheckpoint) || Annotation(cp, kNodeAnnotation).empty()) {
    cp.AddFinalizer(api::finalizers::kCheckpoint);
    cp.metadata.annotations[kNodeAnnotation] = agent_.options().node_name;
    auto updated = store_.Update(cp);
    if (!updated.ok()) return 200ms;
    cp = std::move(*updated);
  }
  const char* what = memory ? "processes, memory and file system" : "file system";
  if (Status s = WritePhase(cp, phase::kCreating, fmt::format("capturing the sandbox's {}", what));
      !s.ok()) {
    return 200ms;
  }
  capturing_.insert(cp.metadata.uid);
  const std::string image = CheckpointImageName(cp.metadata.uid);
  const auto started = clock_.Monotonic();
  auto captured = agent_.CaptureFilesystem(id, image, kCaptureTimeout, memory);
  if (!captured.ok() && captured.status().code() == StatusCode::kAlreadyExists) {
    captured = agent_.images().Get(image);  // made before a crash: ours
  }
  if (!captured.ok()) {
    const std::string msg = fmt::format("capturing sandbox {} failed: {}", spec->sandbox_name,
                                        captured.status().message());
    events_.Warning(cp, "CheckpointFailed", msg);
    return WritePhase(cp, phase::kFailed, msg).ok() ? 0ms : 1000ms;
  }
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Monotonic() - started).count();
  const std::string msg =
      fmt::format("{} of sandbox {} captured in {} ms", what, spec->sandbox_name, ms);
  if (!WritePhase(cp, phase::kSucceeded, msg, image).ok()) return 200ms;
  events_.Normal(cp, "CheckpointSucceeded", msg);
  if (!spec->keep_running.value_or(true)) {
    api::Json patch = {{"spec", {{"paused", true}, {"pauseStrategy", {{"type", "Stop"}}}}}};
    auto paused = store_.Patch(api::SandboxKind(), sandbox->metadata.namespace_,
                               sandbox->metadata.name, patch);
    if (!paused.ok()) {
      Log()->warn("pausing after checkpoint failed sandbox={} error=\"{}\"", sandbox->Key(),
                  paused.status().ToString());
    }
  }
  return Finish(cp);
}

std::chrono::milliseconds CheckpointAgent::Finish(api::Object& cp) {
  auto spec = api::DecodeSpec<api::CheckpointSpec>(cp);
  auto status = api::DecodeStatus<api::CheckpointStatus>(cp);
  if (!spec.ok() || !status.ok() || spec->ttl_after_finished.empty() || !status->completion_time) {
    return 0ms;
  }
  auto ttl = base::ParseDuration(spec->ttl_after_finished);
  if (!ttl) return 0ms;
  const auto expires = *status->completion_time + *ttl;
  const auto now = clock_.Now();
  if (now < expires) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(expires - now) + 1ms;
  }
  auto deleted = store_.Delete(api::CheckpointKind(), cp.metadata.namespace_, cp.metadata.name);
  if (!deleted.ok() && deleted.status().code() != StatusCode::kNotFound) return 1000ms;
  Log()->info("checkpoint expired object={} ttl={}", cp.Key(), spec->ttl_after_finished);
  return 0ms;
}

Status CheckpointAgent::Delete(api::Object& cp) {
  if (!cp.HasFinalizer(api::finalizers::kCheckpoint)) return Status::Ok();
  const std::string image = CheckpointImageName(cp.metadata.uid);
  auto removed = agent_.images().Remove(image);
  if (!removed.ok() && removed.status().code() != StatusCode::kNotFound) {
    Log()->warn("removing checkpoint image failed object={} image={} error=\"{}\"", cp.Key(), image,
                removed.status().ToString());
    return removed.status();
  }
  if (removed.ok()) {
    Log()->info("checkpoint deleted object={} image={} freed_bytes={}", cp.Key(), image,
                removed->freed_bytes);
  }
  // Sandboxes restored from its memory have read it: nothing holds it after their start. A
  // capture cut short left its staging directory.
  const MemoryImagePaths memory = MemoryImagePaths::For(agent_.options().root, image);
  for (const std::string& dir : {memory.dir, memory.Staging().dir}) {
    if (Status gone = runtime::native::RemoveTree(dir); !gone.ok()) {
      Log()->warn("removing checkpoint memory failed object={} dir={} error=\"{}\"", cp.Key(), dir,
                  gone.ToString());
      return gone;
    }
  }
  cp.RemoveFinalizer(api::finalizers::kCheckpoint);
  auto updated = store_.Update(cp);
  if (!updated.ok() && updated.status().code() != StatusCode::kNotFound) return updated.status();
  return Status::Ok();
}

Status CheckpointAgent::WritePhase(api::Object& cp, const std::string& p,
                                   const std::string& message, const std::string& image) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto status = api::DecodeStatus<api::CheckpointStatus>(cp);
    api::CheckpointStatus st = status.ok() ? *status : api::CheckpointStatus{};
    st.phase = p;
    st.message = message;
    st.observed_generation = cp.metadata.generation;
    if (!image.empty()) st.checkpoint_id = image;
    if (Finished(p)) st.completion_time = clock_.Now();
    api::EncodeStatus(st, cp);
    auto written = store_.UpdateStatus(cp);
    if (written.ok()) {
      cp = std::move(*written);
      return Status::Ok();
    }
    if (written.status().code() != StatusCode::kAborted) return written.status();
    auto fresh = store_.Get(api::CheckpointKind(), cp.metadata.namespace_, cp.metadata.name);
    if (!fresh.ok()) return fresh.status();
    cp = std::move(*fresh);
  }
  return AbortedError(fmt::format("checkpoint {}: status kept changing", cp.Key()));
}

}  // namespace warren::node
