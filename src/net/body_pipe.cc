#include "net/body_pipe.h"

#include <cstring>

namespace warren::net {

BodyPipe::BodyPipe(std::function<void()> wake, std::function<bool()> on_loop_thread)
    : wake_(std::move(wake)), on_loop_thread_(std::move(on_loop_thread)) {}

Result<size_t> BodyPipe::Read(char* buf, size_t n) {
  if (on_loop_thread_()) {
    return FailedPreconditionError(
        "BodyReader::Read on a loop thread would block it; use a blocking route");
  }
  if (n == 0) return size_t{0};
  bool wake = false;
  size_t copied = 0;
  {
    std::unique_lock lock(mu_);
    if (!started_) {
      started_ = true;
      lock.unlock();
      wake_();
      lock.lock();
    }
    readable_.wait(lock, [&] { return buffered_ > 0 || finished_ || !error_.ok(); });
    while (copied < n && !pieces_.empty()) {
      std::string& front = pieces_.front();
      size_t take = std::min(n - copied, front.size() - offset_);
      std::memcpy(buf + copied, front.data() + offset_, take);
      copied += take;
      offset_ += take;
      buffered_ -= take;
      if (offset_ == front.size()) {
        pieces_.pop_front();
        offset_ = 0;
      }
    }
    if (copied == 0) {
      if (!error_.ok()) return error_;
      return size_t{0};  // finished
    }
    if (paused_ && buffered_ < kHighWater / 2) {
      paused_ = false;
      wake = true;
    }
  }
  if (wake) wake_();
  return copied;
}

bool BodyPipe::started() const {
  std::lock_guard lock(mu_);
  return started_;
}

void BodyPipe::Push(std::string data) {
  if (data.empty()) return;
  {
    std::lock_guard lock(mu_);
    if (finished_ || !error_.ok()) return;
    buffered_ += data.size();
    pieces_.push_back(std::move(data));
  }
  readable_.notify_all();
}

void BodyPipe::Finish() {
  {
    std::lock_guard lock(mu_);
    if (!error_.ok()) return;
    finished_ = true;
  }
  readable_.notify_all();
}

void BodyPipe::Fail(Status error) {
  {
    std::lock_guard lock(mu_);
    if (finished_ || !error_.ok()) return;
    error_ = std::move(error);
  }
  readable_.notify_all();
}

bool BodyPipe::PauseIfFull() {
  std::lock_guard lock(mu_);
  if (buffered_ < kHighWater) return false;
  paused_ = true;
  return true;
}

}  // namespace warren::net
