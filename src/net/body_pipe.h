#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "net/http.h"

namespace warren::net {

// The BodyReader of a stream_body route: the connection's loop pushes body pieces as they
// arrive, a handler thread reads them. Reading starts the flow (nothing is read from the socket
// until the handler asks, so a handler may instead hand the body to Responder::Proxy), and the
// loop pauses while more than kHighWater bytes wait unread. Shared (shared_ptr) by the request
// and the connection. Thread-safe.
class BodyPipe final : public BodyReader {
 public:
  static constexpr size_t kHighWater = 1 << 20;

  // `wake` asks the loop to start or resume reading; it must not block. `on_loop_thread`
  // tells whether the caller is a loop thread, where a blocking Read would deadlock.
  BodyPipe(std::function<void()> wake, std::function<bool()> on_loop_thread);

  Result<size_t> Read(char* buf, size_t n) override;

  // Loop side.
  bool started() const;
  void Push(std::string data);
  void Finish();            // the body ended cleanly
  void Fail(Status error);  // no more data will come; Read returns `error` once drained
  // True (and remembered, so the next Read that drains the pipe wakes the loop) when the
  // reader is this far behind.
  bool PauseIfFull();

 private:
  const std::function<void()> wake_;
  const std::function<bool()> on_loop_thread_;
  mutable std::mutex mu_;
  std::condition_variable readable_;
  // Guarded by mu_:
  std::deque<std::string> pieces_;
  size_t offset_ = 0;  // into pieces_.front()
  size_t buffered_ = 0;
  bool started_ = false;
  bool paused_ = false;
  bool finished_ = false;
  Status error_;
};

}  // namespace warren::net
