#include "net/blocking_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace warren::net {
namespace {

using namespace std::chrono_literals;

// Polls, because threads end on their own clock.
bool Eventually(const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return condition();
}

TEST(BlockingPoolTest, StartsNoThreadUntilWorkArrives) {
  BlockingPool pool(8);
  EXPECT_EQ(pool.threads(), 0);
  std::latch ran(1);
  pool.Post([&] { ran.count_down(); });
  ran.wait();
  EXPECT_EQ(pool.threads(), 1);
}

TEST(BlockingPoolTest, GrowsWhileEveryThreadIsBusyUpToTheMaximum) {
  BlockingPool pool(4);
  std::latch started(4);
  std::latch release(1);
  std::atomic<int> fifth_ran{0};
  for (int i = 0; i < 4; ++i) {
    pool.Post([&] {
      started.count_down();
      release.wait();
    });
  }
  started.wait();  // four blocking tasks run at once
  EXPECT_EQ(pool.threads(), 4);
  pool.Post([&] { fifth_ran = 1; });  // waits for a free thread rather than a fifth one
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(fifth_ran.load(), 0);
  EXPECT_EQ(pool.threads(), 4);
  release.count_down();
  EXPECT_TRUE(Eventually([&] { return fifth_ran.load() == 1; }));
}

TEST(BlockingPoolTest, IdleThreadsEndAndComeBackWhenNeeded) {
  BlockingPool pool(4, 50ms);
  std::latch started(3);
  std::latch release(1);
  for (int i = 0; i < 3; ++i) {
    pool.Post([&] {
      started.count_down();
      release.wait();
    });
  }
  started.wait();
  EXPECT_EQ(pool.threads(), 3);
  release.count_down();
  EXPECT_TRUE(Eventually([&] { return pool.threads() == 0; }));
  std::latch again(1);
  pool.Post([&] { again.count_down(); });
  again.wait();
  EXPECT_EQ(pool.threads(), 1);
}

TEST(BlockingPoolTest, TasksRunInOrderOnOneThreadAndJoinRunsWhatIsQueued) {
  std::vector<int> order;
  {
    BlockingPool pool(1);
    std::latch release(1);
    pool.Post([&] { release.wait(); });
    for (int i = 0; i < 100; ++i) pool.Post([&order, i] { order.push_back(i); });
    release.count_down();
    pool.Join();
    EXPECT_EQ(pool.threads(), 0);
  }
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(BlockingPoolTest, ManyShortTasksFromSeveralThreadsAllRun) {
  std::atomic<int> ran{0};
  {
    BlockingPool pool(8, 1ms);  // threads come and go while posts continue
    std::vector<std::thread> posters;
    for (int p = 0; p < 4; ++p) {
      posters.emplace_back([&] {
        for (int i = 0; i < 2000; ++i) pool.Post([&] { ran.fetch_add(1); });
      });
    }
    for (auto& t : posters) t.join();
  }  // the destructor joins
  EXPECT_EQ(ran.load(), 8000);
}

TEST(BlockingPoolTest, TasksPostedAfterJoinAreDroppedNotRun) {
  BlockingPool pool(2);
  pool.Join();
  auto held = std::make_shared<int>(1);
  bool ran = false;
  pool.Post([&ran, held] { ran = true; });
  EXPECT_FALSE(ran);
  EXPECT_EQ(held.use_count(), 1);  // what the task captured was released
  EXPECT_EQ(pool.threads(), 0);
}

TEST(BlockingPoolTest, KeysTakeTurnsInsteadOfFirstComeFirstServed) {
  std::mutex mu;
  std::vector<std::string> order;
  auto record = [&](std::string what) {
    return [&, what] {
      std::lock_guard lock(mu);
      order.push_back(what);
    };
  };
  {
    BlockingPool pool(1);
    std::latch holding(1);
    std::latch release(1);
    pool.Post(1, [&] {  // key 1's first task holds the only thread
      holding.count_down();
      release.wait();
    });
    holding.wait();
    for (int i = 2; i <= 5; ++i) pool.Post(1, record("a" + std::to_string(i)));
    pool.Post(2, record("b1"));
    pool.Post(2, record("b2"));
    EXPECT_EQ(pool.queued(1), 4u);
    EXPECT_EQ(pool.queued(2), 2u);
    release.count_down();
    pool.Join();
  }
  // Key 2 posted after four tasks of key 1, yet waits for only one of them each time.
  EXPECT_EQ(order, (std::vector<std::string>{"b1", "a2", "b2", "a3", "a4", "a5"}));
}

TEST(BlockingPoolTest, AKeyAtItsLimitLeavesThreadsForOtherKeys) {
  BlockingPool pool(4, std::chrono::seconds(10), /*max_running_per_key=*/3);
  std::latch flood_started(3);
  std::latch release(1);
  std::atomic<int> flood_ran{0};
  for (int i = 0; i < 500; ++i) {
    pool.Post(1, [&] {
      if (flood_ran.fetch_add(1) < 3) flood_started.count_down();
      release.wait();
    });
  }
  flood_started.wait();
  EXPECT_EQ(pool.queued(1), 497u);  // the limit holds the rest back
  std::latch other_ran(1);
  pool.Post(2, [&] { other_ran.count_down(); });
  // Served while every one of key 1's tasks still blocks: the fourth thread was kept for it.
  other_ran.wait();
  EXPECT_EQ(flood_ran.load(), 3);
  EXPECT_EQ(pool.threads(), 4);
  release.count_down();
  pool.Join();
  EXPECT_EQ(flood_ran.load(), 500);
}

}  // namespace
}  // namespace warren::net
