#include "node/work_queue.h"

#include <gtest/gtest.h>

#include <thread>

#include "base/testing/fake_clock.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

TEST(WorkQueue, AKeyAddedManyTimesIsWorkedOnOnce) {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Get(), "a");
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Pending(), 0u);
}

TEST(WorkQueue, AKeyIsNeverHandedOutTwiceAtOnce) {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.Add("a");
  ASSERT_EQ(q.Get(), "a");
  q.Add("a");  // changed while being worked on
  q.Add("b");
  EXPECT_EQ(q.Get(), "b") << "a is still being worked on";
  q.Done("b");
  q.Done("a");
  EXPECT_EQ(q.Get(), "a") << "handed out again once done";
}

TEST(WorkQueue, DelayedKeysComeWhenDueAndAnAddWins) {
  base::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("later", 10s);
  q.AddAfter("sooner", 10s);
  q.Add("sooner");  // an Add overrides the delay
  EXPECT_EQ(q.Get(), "sooner");
  EXPECT_EQ(q.Pending(), 1u);
  std::thread advance([&] {
    std::this_thread::sleep_for(50ms);
    clock.Advance(11s);
  });
  EXPECT_EQ(q.Get(), "later");
  advance.join();
}

TEST(WorkQueue, ShutdownWakesWaiters) {
  base::FakeClock clock;
  WorkQueue q(clock);
  std::thread waiter([&] { EXPECT_EQ(q.Get(), std::nullopt); });
  std::this_thread::sleep_for(20ms);
  q.Shutdown();
  waiter.join();
  q.Add("x");
  EXPECT_EQ(q.Get(), std::nullopt);
}

}  // namespace
}  // namespace warren::node
