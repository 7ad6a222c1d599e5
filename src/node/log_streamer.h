#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "net/router.h"
#include "store/store.h"

namespace warren::node {

struct LogStreamOptions {
  // Log responses open at once (followed or not); one more is refused with 429.
  size_t max_streams = 256;
  // How often a followed log is read again for new bytes.
  std::chrono::milliseconds poll{200};
  // How often a followed log that brought nothing new checks whether its sandbox still runs.
  std::chrono::milliseconds status_check{1000};
  // Bytes queued on a response before reading more for it; a client that takes none of them
  // for `stall_timeout` is cut.
  size_t high_water = 1 << 20;
  std::chrono::milliseconds stall_timeout{30000};
};

// Where a log comes from: the command log envd writes for a sandbox, opened without following
// links (NodeAgent::OpenCommandLog), and whether the node is stopping.
struct LogSource {
  std::function<Result<base::UniqueFd>(std::string_view sandbox_id)> open;
  std::function<bool()> stopping;
};

// What one log response asked for.
struct LogRequest {
  std::string namespace_;
  std::string name;
  std::string uid;         // of the Sandbox the response is for: a new one of the same name ends it
  std::string sandbox_id;  // empty: the sandbox has none yet, so nothing is read
  bool follow = false;
  std::optional<int64_t> tail_lines;
  std::optional<int64_t> limit_bytes;
};

// Writes sandbox logs into open responses from one thread of its own, so a `warren logs -f`
// that stays open for hours holds no HTTP worker: the route's handler looks the sandbox up,
// hands its Responder here and returns. Each turn reads at most `high_water` bytes for each
// response whose client keeps up, so one fast log does not starve the others; followed logs end
// when their sandbox ends, is deleted or replaced, the client leaves, or the source stops.
//
// Ownership: borrows the store and whatever `source` reaches, which must outlive it. Owns its
// thread and the open responses; the destructor finishes what is open and joins. Thread-safe.
class LogStreamer {
 public:
  LogStreamer(store::Store& store, LogSource source, LogStreamOptions options = {});
  ~LogStreamer();
  LogStreamer(const LogStreamer&) = delete;
  LogStreamer& operator=(const LogStreamer&) = delete;

  // Answers `responder` with 200 and streams the log into it. ResourceExhausted, with the
  // responder left unanswered, when max_streams are open.
  Status Start(net::Responder& responder, LogRequest request);

  size_t open_streams() const;

 private:
  struct Job;
  void Run();
  // One turn of `job`: false when its response is over.
  bool Pump(Job& job, std::chrono::steady_clock::time_point now, bool& progressed);
  bool StillRunning(const Job& job) const;

  store::Store& store_;
  const LogSource source_;
  const LogStreamOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  // Guarded by mu_:
  std::vector<std::unique_ptr<Job>> incoming_;  // started, not yet taken by the thread
  size_t open_ = 0;                             // incoming_ and the thread's own
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace warren::node
