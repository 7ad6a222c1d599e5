#include "controller/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace warren::controller {
namespace {

using namespace std::chrono_literals;

// Several workers sleep until the same delayed key is due; when it is, one takes it and the
// others go back to waiting. The waiters that lose must not touch the entry the winner removed
// (under ASan, the deadline they waited on used to be read from that freed entry).
TEST(WorkQueueTest, WorkersWaitingForOneDelayedKeyHandItOutOnce) {
  WorkQueue queue;
  queue.AddAfter("default/a", 200ms);
  std::atomic<int> handed_out{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 4; ++i) {
    workers.emplace_back([&] {
      while (std::optional<std::string> key = queue.Get()) {
        EXPECT_EQ(*key, "default/a");
        handed_out.fetch_add(1);
        queue.Done(*key);
      }
    });
  }
  for (int i = 0; i < 300 && handed_out.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(50ms);  // a second hand-out would show up meanwhile
  queue.ShutDown();
  for (auto& w : workers) w.join();
  EXPECT_EQ(handed_out.load(), 1);
}

TEST(WorkQueueTest, AKeyAddedWhileProcessedComesBackAfterDone) {
  WorkQueue queue;
  queue.Add("default/a");
  std::optional<std::string> first = queue.Get();
  ASSERT_EQ(first, "default/a");
  queue.Add("default/a");
  EXPECT_EQ(queue.Len(), 0u);  // not handed to a second worker while the first holds it
  queue.Done(*first);
  EXPECT_EQ(queue.Len(), 1u);
  EXPECT_EQ(queue.Get(), "default/a");
}

// A key deferred on every pass (a pool refill waiting out a burst of claims) is handed out once,
// at the earliest of its due times, not once per deferral.
TEST(WorkQueueTest, DelayedAddsOfOneKeyKeepOnlyTheEarliest) {
  WorkQueue queue;
  for (int i = 0; i < 3; ++i) queue.AddAfter("default/a", 60ms);
  queue.AddAfter("default/a", 10ms);
  queue.AddAfter("default/a", 100ms);
  std::atomic<int> handed_out{0};
  std::thread worker([&] {
    while (std::optional<std::string> key = queue.Get()) {
      handed_out.fetch_add(1);
      queue.Done(*key);
    }
  });
  for (int i = 0; i < 500 && handed_out.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(250ms);  // past every later due time
  queue.ShutDown();
  worker.join();
  EXPECT_EQ(handed_out.load(), 1);
}

}  // namespace
}  // namespace warren::controller
