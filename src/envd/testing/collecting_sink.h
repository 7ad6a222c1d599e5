#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "envd/stream_session.h"

namespace warren::envd::testing {

// A MessageSink that records what a stream sent, for tests of streams without HTTP. Thread-safe.
class CollectingSink : public MessageSink {
 public:
  bool Send(std::string json) override;
  void Finish(const Status& status) override;
  bool WaitWritable(size_t, std::chrono::milliseconds) override { return !closed(); }
  void OnClose(std::function<void()> callback) override;
  bool closed() const override;

  // Simulates the client going away.
  void Disconnect();

  // Blocks until the stream finished (or `timeout`); returns the end status if it did.
  std::optional<Status> WaitFinished(std::chrono::milliseconds timeout);
  // Blocks until some message contains `needle`.
  bool WaitForMessage(const std::string& needle, std::chrono::milliseconds timeout);
  std::vector<std::string> messages() const;
  int finish_count() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::string> messages_;            // guarded by mu_
  std::optional<Status> end_;                    // guarded by mu_
  int finishes_ = 0;                             // guarded by mu_
  bool disconnected_ = false;                    // guarded by mu_
  std::vector<std::function<void()>> on_close_;  // guarded by mu_
};

}  // namespace warren::envd::testing
