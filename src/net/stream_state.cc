#include "net/stream_state.h"

namespace warren::net {

StreamState::StreamState(std::function<void()> wake) : wake_(std::move(wake)) {}

StreamState::~StreamState() = default;

bool StreamState::Write(std::string data) {
  {
    std::lock_guard lock(mu_);
    if (closed_ || finish_requested_ || abort_requested_) return false;
    if (data.empty()) return true;  // an empty chunk would end the body
    queued_bytes_ += data.size();
    queue_.push_back(std::move(data));
    if (wake_pending_) return true;
    wake_pending_ = true;
  }
  wake_();
  return true;
}

bool StreamState::WaitWritable(size_t high_water, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  bool ready = writable_.wait_for(
      lock, timeout, [&] { return closed_ || abort_requested_ || queued_bytes_ <= high_water; });
  return ready && !closed_ && !abort_requested_ && !finish_requested_;
}

void StreamState::Finish() {
  {
    std::lock_guard lock(mu_);
    if (closed_ || finish_requested_ || abort_requested_) return;
    finish_requested_ = true;
  }
  wake_();
}

void StreamState::Abort() {
  {
    std::lock_guard lock(mu_);
    if (closed_ || abort_requested_) return;
    abort_requested_ = true;
  }
  writable_.notify_all();
  wake_();
}

bool StreamState::closed() const {
  std::lock_guard lock(mu_);
  return closed_ || finish_requested_ || abort_requested_;
}

void StreamState::OnClose(std::function<void()> callback) {
  {
    std::lock_guard lock(mu_);
    if (!closed_) {
      on_close_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

void StreamState::TakePending(Pending& out) {
  std::lock_guard lock(mu_);
  out.chunks.clear();
  out.chunks.swap(queue_);
  out.finish = finish_requested_;
  out.abort = abort_requested_;
  wake_pending_ = false;
}

bool StreamState::HasPending() const {
  std::lock_guard lock(mu_);
  return !queue_.empty() || finish_requested_ || abort_requested_;
}

void StreamState::MarkWritten(size_t n) {
  {
    std::lock_guard lock(mu_);
    queued_bytes_ = n > queued_bytes_ ? 0 : queued_bytes_ - n;
  }
  writable_.notify_all();
}

void StreamState::MarkClosed() {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    queue_.clear();
    queued_bytes_ = 0;
    callbacks.swap(on_close_);
  }
  writable_.notify_all();
  for (auto& cb : callbacks) cb();
}

}  // namespace warren::net
