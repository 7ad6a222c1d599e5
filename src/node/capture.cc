// NodeAgent::CaptureFilesystem: a sandbox's writable layer made into an image, for snapshots,
// forks and Checkpoint objects (checkpoint_agent.h), with its memory where the runtime keeps
// it (memory_image.h); and what a sandbox restored from such memory needs. See node_agent.h.

#include <fmt/format.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/ids.h"
#include "base/log.h"
#include "base/small_file.h"
#include "node/checkpoint_agent.h"
#include "node/memory_image.h"
#include "node/node_agent.h"
#include "node/reasons.h"
#include "node/sandbox_files.h"
#include "node/sandbox_storage.h"
#include "runtime/native/dir_tree.h"

namespace warren::node {

using namespace std::chrono_literals;

struct CaptureRequest {
  std::string image_name;
  bool memory = false;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;                                              // guarded by mu
  Result<image::ImageRecord> result = InternalError("not done");  // guarded by mu
};

Result<image::ImageRecord> NodeAgent::CaptureFilesystem(std::string_view sandbox_id,
                                                        std::string_view image_name,
                                                        std::chrono::milliseconds timeout,
                                                        bool memory) {
  const runtime::StateSupport can = runtime_->SupportedState(sandbox_id);
  if (memory ? !can.memory : !can.filesystem) {
    return UnimplementedError(fmt::format("sandbox {}: its runtime cannot capture {}", sandbox_id,
                                          memory ? "its memory" : "a file system alone"));
  }
  auto request = std::make_shared<CaptureRequest>();
  request->image_name = std::string(image_name);
  request->memory = memory;
  std::string key;
  if (!locals_.With(sandbox_id, [&](Local& l) {
        l.captures.push_back(request);
        key = l.key;
      })) {
    return NotFoundError(fmt::format("this node runs no sandbox {}", sandbox_id));
  }
  queue_.Add(key);
  const base::MonoTime deadline = clock_.Monotonic() + timeout;
  std::unique_lock lock(request->mu);
  while (!request->done) {
    // Woken now and then to notice a sandbox destroyed before its reconcile took the request.
    request->cv.wait_for(lock, 100ms);
    if (request->done) break;
    lock.unlock();
    bool withdrawn = false, gone = false;
    const bool stopping = stopping_.load();
    const bool expired = stopping || clock_.Monotonic() >= deadline;
    gone = !locals_.With(sandbox_id, [&](Local& l) {
      if (!expired) return;
      auto found = std::find(l.captures.begin(), l.captures.end(), request);
      if (found != l.captures.end()) {
        l.captures.erase(found);
        withdrawn = true;
      }
    });
    lock.lock();
    if (request->done) break;
    if (gone) {
      return NotFoundError(
          fmt::format("sandbox {} was destroyed before its file system was captured", sandbox_id));
    }
    if (withdrawn && stopping) {
      return UnavailableError(
          fmt::format("capture of sandbox {}: the node agent is stopping", sandbox_id));
    }
    if (withdrawn) {
      return DeadlineExceededError(fmt::format("capture of sandbox {} did not start within {} ms",
                                               sandbox_id, timeout.count()));
    }
  }
  return request->result;
}

Status NodeAgent::CaptureMemory(
    const std::string& id, const std::string& image_name,
    const std::function<Status(const runtime::WritableLayerView&)>& commit) {
  const MemoryImagePaths done = MemoryImagePaths::For(options_.root, image_name);
  const MemoryImagePaths staging = done.Staging();
  // What an attempt cut short left: files and memory must come from one instant, so an image
  // committed without its memory (or the other way round) is made again.
  RETURN_IF_ERROR(runtime::native::RemoveTree(staging.dir));
  RETURN_IF_ERROR(runtime::native::RemoveTree(done.dir));
  if (auto stale = images_->Remove(image_name);
      !stale.ok() && stale.status().code() != StatusCode::kNotFound) {
    return stale.status();
  }
  RETURN_IF_ERROR(MakeDirs(staging.dir));
  auto secret = secret_->ForSandbox(id);
  Status s = runtime_->CaptureMemory(id, staging.image, [&](const runtime::WritableLayerView& l) {
    RETURN_IF_ERROR(CopyFlatDir(PathsFor(id).log_dir, staging.logs));
    RETURN_IF_ERROR(base::WriteFileAtomically(staging.secret, secret, false, 0600));
    return commit(l);
  });
  if (s.ok() && rename(staging.dir.c_str(), done.dir.c_str()) != 0) {
    s = ErrnoError(fmt::format("rename {}", staging.dir), errno);
  }
  if (!s.ok()) {
    runtime::native::RemoveTree(staging.dir).IgnoreError();
    images_->Remove(image_name).status().IgnoreError();  // a commit without its memory
  }
  return s;
}

Status NodeAgent::RekeyRestoredEnvd(const std::string& id) {
  const std::string file = PathsFor(id).dir + "/" + kEnvdRekeyFile;
  auto held = base::ReadSmallFile(file);
  if (!held.ok())
    return held.status().code() == StatusCode::kNotFound ? Status::Ok() : held.status();
  runtime::Runtime* rt = runtime_.get();
  EnvdClient source_keyed(
      [rt, id](std::chrono::milliseconds timeout) { return rt->Dial(id, kEnvdPort, timeout); },
      *held);
  // A fresh token closes it as a birth token does, until the sandbox's own /init.
  const api::Json body = {{"resetSecret", secret_->ForSandbox(id)},
                          {"accessToken", base::RandomHex(32)}};
  RETURN_IF_ERROR(source_keyed.Init(body.dump(), 5s));
  if (unlink(file.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError(fmt::format("remove {}", file), errno);
  }
  if (std::shared_ptr<EnvdClient> envd = EnvdFor(id)) envd->CloseIdle();
  base::Logger("node")->info("restored envd re-keyed id={}", id);
  return Status::Ok();
}

std::optional<Failure> NodeAgent::RekeyFailure(const std::string& id) {
  Status s = RekeyRestoredEnvd(id);
  if (s.ok()) return std::nullopt;
  return Failure{reasons::kStartError,
                 fmt::format("its envd, restored from the memory of the sandbox it was copied "
                             "from, did not take this sandbox's own secret: {}",
                             s.message())};
}

std::optional<Failure> NodeAgent::PrepareMemoryRestore(const std::string& image_name,
                                                       const SandboxPaths& paths,
                                                       runtime::SandboxSpec& spec) {
  if (!IsCheckpointImageName(image_name) || spec.runtime_class != api::kRuntimeGvisor) {
    return std::nullopt;
  }
  const MemoryImagePaths memory = MemoryImagePaths::For(options_.root, image_name);
  if (access(memory.image.c_str(), F_OK) != 0) return std::nullopt;  // its files only
  Status s = CopyFlatDir(memory.logs, paths.log_dir);
  auto held = base::ReadSmallFile(memory.secret);
  if (s.ok()) s = held.status();
  if (s.ok()) s = base::WriteFileAtomically(paths.dir + "/" + kEnvdRekeyFile, *held, false, 0600);
  if (!s.ok()) {
    return Failure{reasons::kStartError,
                   fmt::format("preparing its restore from {}: {}", memory.dir, s.message())};
  }
  spec.restore_image = memory.image;
  return std::nullopt;
}

void NodeAgent::RunCaptures(const std::string& id, const std::string& uid) {
  std::vector<std::shared_ptr<CaptureRequest>> pending;
  locals_.With(id, [&](Local& l) { pending.swap(l.captures); });
  for (const auto& request : pending) {
    const auto started = clock_.Monotonic();
    Result<image::ImageRecord> committed = InternalError("the runtime did not call back");
    // Snapshots land in the node's image store, outside any sandbox's ephemeral-storage: they
    // may not eat the reserve the host keeps free, as no new sandbox may.
    std::optional<std::string> pressure;
    if (auto disk = ReadDiskSpace(images_->root()); disk.ok()) {
      pressure = DiskPressure(*disk, options_.storage);
    }
    Status s;
    const char* short_of = "the node's image store";
    if (!pressure && request->memory) {
      // Memory images are kept under the node's root, which may be another file system.
      if (auto disk = ReadDiskSpace(options_.root); disk.ok()) {
        pressure = DiskPressure(*disk, options_.storage);
        short_of = "the node's root (where memory images are kept)";
      }
    }
    if (pressure) {
      s = ResourceExhaustedError(fmt::format("{} is short of disk: {}", short_of, *pressure));
    } else {
      auto commit = [&](const runtime::WritableLayerView& layer) {
        image::CopyLayerOptions options;
        options.id_shift = layer.id_shift;
        options.id_count = layer.id_count;
        committed = images_->CommitImage(request->image_name, LeaseId(uid), layer.fd, options);
        return committed.status();
      };
      s = request->memory ? CaptureMemory(id, request->image_name, commit)
                          : runtime_->CaptureWritableLayer(id, commit);
    }
    if (!s.ok()) committed = s;  // the freeze, the copy, or (after a commit) the thaw failed
    base::Logger("node")->info(
        "sandbox file system captured id={} image={} memory={} ok={} ms={} error=\"{}\"", id,
        request->image_name, request->memory, committed.ok(),
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Monotonic() - started).count(),
        committed.ok() ? "" : committed.status().ToString());
    std::lock_guard lock(request->mu);
    request->result = std::move(committed);
    request->done = true;
    request->cv.notify_all();
  }
}

}  // namespace warren::node
