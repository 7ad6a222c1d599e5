#include "net/blocking_pool.h"

#include <algorithm>

namespace warren::net {

BlockingPool::BlockingPool(int max_threads, std::chrono::milliseconds idle_timeout,
                           int max_running_per_key)
    : max_threads_(std::max(1, max_threads)),
      idle_timeout_(idle_timeout),
      max_running_per_key_(max_running_per_key > 0 ? std::min(max_running_per_key, max_threads_)
                                                   : max_threads_) {}

BlockingPool::~BlockingPool() { Join(); }

size_t BlockingPool::RunnableLocked(const KeyQueue& q) const {
  int room = max_running_per_key_ - q.running;
  return room <= 0 ? 0 : std::min(q.tasks.size(), static_cast<size_t>(room));
}

void BlockingPool::MakeReadyLocked(uint64_t key, KeyQueue& q) {
  if (q.in_ready || RunnableLocked(q) == 0) return;
  q.in_ready = true;
  ready_.push_back(key);
}

void BlockingPool::Post(uint64_t key, std::function<void()> task) {
  std::vector<std::thread> finished;
  bool wake = false;
  {
    std::unique_lock lock(mu_);
    if (joining_) {
      // A connection that outlived the server's shutdown grace can still post: its task is
      // dropped (a handler's Responder answers 500 when destroyed unanswered), not run.
      lock.unlock();
      task = nullptr;
      return;
    }
    KeyQueue& q = keys_[key];
    size_t before = RunnableLocked(q);
    q.tasks.push_back(std::move(task));
    ++queued_;
    size_t after = RunnableLocked(q);
    runnable_ += after - before;
    MakeReadyLocked(key, q);
    finished = TakeFinishedLocked();
    // A task held back by its key's limit needs no thread now: one of that key's running
    // tasks' threads takes it when it finishes.
    wake = after > before && idle_ > 0;
    // An idle thread woken for an earlier task still counts as idle until it takes it.
    if (runnable_ > static_cast<size_t>(idle_) && running_ < max_threads_) {
      ++running_;
      std::thread t([this] { Run(); });
      threads_.emplace(t.get_id(), std::move(t));
    }
  }
  // Woken outside the lock, the thread does not block on it at once.
  if (wake) work_.notify_one();
  for (auto& t : finished) t.join();
}

void BlockingPool::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (ready_.empty()) {
      // While joining, queued tasks held back by their key's limit still need running: the
      // threads running that key's tasks take them, so only an empty pool lets a thread go.
      if (joining_ && queued_ == 0) break;
      ++idle_;
      bool woken = work_.wait_for(lock, idle_timeout_,
                                  [this] { return !ready_.empty() || (joining_ && queued_ == 0); });
      --idle_;
      if (!woken) break;  // idle for too long
      continue;
    }
    uint64_t key = ready_.front();
    ready_.pop_front();
    auto it = keys_.find(key);
    KeyQueue& q = it->second;
    q.in_ready = false;
    size_t before = RunnableLocked(q);
    std::function<void()> task = std::move(q.tasks.front());
    q.tasks.pop_front();
    --queued_;
    ++q.running;
    runnable_ -= before - RunnableLocked(q);
    MakeReadyLocked(key, q);  // its next task goes behind the other keys' turns
    lock.unlock();
    task();
    task = nullptr;  // what it captured goes before the lock is taken again
    lock.lock();
    // Nothing erases a key with a running task, but other keys' inserts may have rehashed.
    it = keys_.find(key);
    KeyQueue& done = it->second;
    before = RunnableLocked(done);
    --done.running;
    runnable_ += RunnableLocked(done) - before;
    MakeReadyLocked(key, done);
    if (done.tasks.empty() && done.running == 0) keys_.erase(it);
  }
  --running_;
  finished_.push_back(std::this_thread::get_id());
  exited_.notify_all();
}

std::vector<std::thread> BlockingPool::TakeFinishedLocked() {
  std::vector<std::thread> out;
  for (auto id : finished_) {
    auto it = threads_.find(id);
    out.push_back(std::move(it->second));
    threads_.erase(it);
  }
  finished_.clear();
  return out;
}

void BlockingPool::Join() {
  std::vector<std::thread> finished;
  {
    std::unique_lock lock(mu_);
    joining_ = true;
    work_.notify_all();
    exited_.wait(lock, [this] { return running_ == 0; });
    finished = TakeFinishedLocked();
  }
  for (auto& t : finished) t.join();
}

int BlockingPool::threads() const {
  std::lock_guard lock(mu_);
  return running_;
}

size_t BlockingPool::queued(uint64_t key) const {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  return it == keys_.end() ? 0 : it->second.tasks.size();
}

size_t BlockingPool::queued() const {
  std::lock_guard lock(mu_);
  return queued_;
}

}  // namespace warren::net
