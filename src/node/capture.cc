// NodeAgent::CaptureFilesystem: a sandbox's writable layer made into an image, for snapshots,
// forks and Checkpoint objects (checkpoint_agent.h). See node_agent.h.

#include <fmt/format.h>

#include <algorithm>

#include "base/log.h"
#include "node/node_agent.h"
#include "node/sandbox_storage.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

}  // namespace

struct CaptureRequest {
  std::string image_name;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;                                              // guarded by mu
  Result<image::ImageRecord> result = InternalError("not done");  // guarded by mu
};

Result<image::ImageRecord> NodeAgent::CaptureFilesystem(std::string_view sandbox_id,
                                                        std::string_view image_name,
                                                        std::chrono::milliseconds timeout) {
  if (!runtime_->SupportedState(sandbox_id).filesystem) {
    return UnimplementedError(
        fmt::format("sandbox {}: its runtime cannot capture a file system", sandbox_id));
  }
  auto request = std::make_shared<CaptureRequest>();
  request->image_name = std::string(image_name);
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
    if (pressure) {
      s = ResourceExhaustedError("the node's image store is short of disk: " + *pressure);
    } else {
      s = runtime_->CaptureWritableLayer(id, [&](const runtime::WritableLayerView& layer) {
        image::CopyLayerOptions options;
        options.id_shift = layer.id_shift;
        options.id_count = layer.id_count;
        committed = images_->CommitImage(request->image_name, LeaseId(uid), layer.fd, options);
        return committed.status();
      });
    }
    if (!s.ok()) committed = s;  // the freeze, the copy, or (after a commit) the thaw failed
    base::Logger("node")->info(
        "sandbox file system captured id={} image={} ok={} ms={} error=\"{}\"", id,
        request->image_name, committed.ok(),
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Monotonic() - started).count(),
        committed.ok() ? "" : committed.status().ToString());
    std::lock_guard lock(request->mu);
    request->result = std::move(committed);
    request->done = true;
    request->cv.notify_all();
  }
}

}  // namespace warren::node
