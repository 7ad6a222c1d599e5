#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "controller/informer.h"
#include "store/store.h"

namespace warren::server::e2b {

// GET /teams/{teamID}/metrics: how many sandboxes a team (namespace) ran at once and how fast
// it started them, sampled every `interval` and kept for `capacity` samples per team (an hour
// by default; in memory, so a server restart starts the history afresh).
//
// Counted from a watch of Sandbox objects, not by listing: a sandbox counts while it is running
// and shown through E2B (claimed, not paused or dead); a start is a sandbox becoming so for the
// first time (a cold create or a claim; a resume is not a start), so one that lived less than an
// interval still counts. Idle costs nothing but the timer. Thread-safe.
class TeamMetrics {
 public:
  struct Options {
    std::chrono::milliseconds interval{5000};
    size_t capacity = 720;
  };
  struct Sample {
    base::WallTime time{};
    int32_t concurrent = 0;
    double start_rate = 0;  // starts per second over the interval that ended at `time`
  };

  TeamMetrics(store::Store& store, base::Clock& clock, Options options);
  ~TeamMetrics();

  Status Start();
  void Stop();
  // Takes a sample now (the timer calls it; tests too).
  void SampleNow();
  // The team's samples with start <= time <= end, oldest first.
  std::vector<Sample> Range(std::string_view team, std::optional<base::WallTime> start,
                            std::optional<base::WallTime> end) const;

 private:
  struct Tracked {
    std::string namespace_;
    bool running = false;
    bool started = false;  // has run: a resume is not a start
  };
  struct Team {
    int32_t running = 0;
    uint64_t starts = 0;  // since the last sample
    std::deque<Sample> samples;
  };
  void OnChange(const controller::Informer::Change& change);
  void Loop();

  base::Clock& clock_;
  const Options options_;
  controller::Informer informer_;
  mutable std::mutex mu_;
  std::map<std::string, Tracked> tracked_;          // by uid; guarded by mu_
  std::map<std::string, Team, std::less<>> teams_;  // guarded by mu_
  base::WallTime last_sample_{};                    // guarded by mu_
  bool stopping_ = false;                           // guarded by mu_
  std::atomic<bool> listing_{false};                // the informer's first list, on Start's thread
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace warren::server::e2b
