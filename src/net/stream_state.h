#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "net/router.h"

namespace warren::net {

// The state behind a ResponseStream: an ordered queue of chunks between producers (any thread)
// and the connection's loop, which drains it. Owned jointly (shared_ptr) by the producer and
// the connection, so either may go first. Thread-safe; `wake` and the OnClose callbacks run
// without the lock held.
class StreamState final : public ResponseStream {
 public:
  // `wake` tells the loop to look at the stream (data queued, Finish or Abort). It is called
  // from any thread and must not block; it may be called after the connection is gone.
  explicit StreamState(std::function<void()> wake);
  ~StreamState() override;

  bool Write(std::string data) override;
  bool WaitWritable(size_t high_water, std::chrono::milliseconds timeout) override;
  void Finish() override;
  void Abort() override;
  bool closed() const override;
  void OnClose(std::function<void()> callback) override;

  // Loop side. Moves out everything queued so far and what the producer asked for.
  struct Pending {
    std::vector<std::string> chunks;
    bool finish = false;
    bool abort = false;
  };
  void TakePending(Pending& out);
  bool HasPending() const;
  // `n` bytes of what TakePending returned reached the socket.
  void MarkWritten(size_t n);
  // The stream is over (finished, aborted, client gone, server stopping): later writes fail,
  // waiters wake, OnClose callbacks run on this thread. Idempotent.
  void MarkClosed();

 private:
  const std::function<void()> wake_;
  mutable std::mutex mu_;
  std::condition_variable writable_;
  // Guarded by mu_:
  std::vector<std::string> queue_;
  size_t queued_bytes_ = 0;  // queued or taken but not yet written
  bool wake_pending_ = false;
  bool finish_requested_ = false;
  bool abort_requested_ = false;
  bool closed_ = false;
  std::vector<std::function<void()>> on_close_;
};

}  // namespace warren::net
