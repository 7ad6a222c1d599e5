#include "envd/testing/collecting_sink.h"

namespace warren::envd::testing {

bool CollectingSink::Send(std::string json) {
  std::lock_guard lock(mu_);
  if (end_ || disconnected_) return false;
  messages_.push_back(std::move(json));
  changed_.notify_all();
  return true;
}

void CollectingSink::Finish(const Status& status) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mu_);
    ++finishes_;
    if (!end_) end_ = status;
    callbacks.swap(on_close_);
    changed_.notify_all();
  }
  for (auto& c : callbacks) c();
}

void CollectingSink::OnClose(std::function<void()> callback) {
  {
    std::lock_guard lock(mu_);
    if (!end_ && !disconnected_) {
      on_close_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

bool CollectingSink::closed() const {
  std::lock_guard lock(mu_);
  return end_.has_value() || disconnected_;
}

void CollectingSink::Disconnect() {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(mu_);
    disconnected_ = true;
    callbacks.swap(on_close_);
  }
  for (auto& c : callbacks) c();
}

std::optional<Status> CollectingSink::WaitFinished(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return end_.has_value(); });
  return end_;
}

bool CollectingSink::WaitForMessage(const std::string& needle, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [&] {
    for (const auto& m : messages_) {
      if (m.find(needle) != std::string::npos) return true;
    }
    return false;
  });
}

std::vector<std::string> CollectingSink::messages() const {
  std::lock_guard lock(mu_);
  return messages_;
}

int CollectingSink::finish_count() const {
  std::lock_guard lock(mu_);
  return finishes_;
}

}  // namespace warren::envd::testing
