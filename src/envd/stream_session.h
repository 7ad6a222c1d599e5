#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "envd/timer_queue.h"

namespace warren::envd {

// Where the messages of one server stream go. The HTTP glue implements it over a chunked
// response (each message one Connect envelope); tests collect messages. Thread-safe.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // One message (JSON). False once the stream is closed or the client is gone.
  virtual bool Send(std::string json) = 0;
  // The end-of-stream frame, then the end of the body. Called at most once (StreamSession
  // guarantees it).
  virtual void Finish(const Status& status) = 0;
  // Blocks a producer while too much is queued for a slow client; false when the client is gone.
  virtual bool WaitWritable(size_t high_water, std::chrono::milliseconds timeout) = 0;
  // `callback` runs once when the client goes away or the stream finishes.
  virtual void OnClose(std::function<void()> callback) = 0;
  virtual bool closed() const = 0;
};

struct StreamOptions {
  // Keepalive-Ping-Interval: a keepalive message after this much silence.
  std::chrono::milliseconds keepalive{std::chrono::seconds(90)};
  // Connect-Timeout-Ms: the stream ends with deadline_exceeded when it passes.
  std::optional<std::chrono::milliseconds> timeout;
  // Authenticated by the node secret (IsNodeCall): the node agent's probes, not journalled.
  bool node_call = false;
};

// One open server stream: the messages, keepalives when idle, the deadline, and exactly one
// end-of-stream frame however many parties try to end it (the producer, the deadline, a reset).
// Shared by whoever produces into it (a process, a watcher) and the timers; thread-safe.
class StreamSession : public std::enable_shared_from_this<StreamSession> {
 public:
  static std::shared_ptr<StreamSession> Create(std::shared_ptr<MessageSink> sink,
                                               TimerQueue& timers, StreamOptions options,
                                               std::string keepalive_json);
  ~StreamSession();

  // Sends one message unless the stream has ended. Returns false when it has (or the client
  // is gone), so producers can drop the subscriber.
  bool Send(std::string json);
  // Ends the stream with `status` (ok → "{}"); later calls do nothing.
  void End(const Status& status);
  bool ended() const;
  // Runs `callback` once after the stream has ended (right away if it has), on whichever thread
  // ended it; it must not block.
  void OnEnd(std::function<void()> callback);
  // Backpressure for producers on their own threads.
  bool WaitWritable(size_t high_water, std::chrono::milliseconds timeout);

 private:
  StreamSession(std::shared_ptr<MessageSink> sink, TimerQueue& timers, StreamOptions options,
                std::string keepalive_json);
  void Arm();
  void OnKeepaliveTimer();

  const std::shared_ptr<MessageSink> sink_;
  TimerQueue& timers_;
  const StreamOptions options_;
  const std::string keepalive_json_;

  mutable std::mutex mu_;
  bool ended_ = false;                         // guarded by mu_
  base::MonoTime last_sent_;                   // guarded by mu_
  TimerQueue::TimerId keepalive_timer_ = 0;    // guarded by mu_
  TimerQueue::TimerId deadline_timer_ = 0;     // guarded by mu_
  std::vector<std::function<void()>> on_end_;  // guarded by mu_
};

}  // namespace warren::envd
