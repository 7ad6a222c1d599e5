#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "api/kinds.h"
#include "store/testing/backend_store.h"
#include "store/testing/objects.h"

namespace warren::store {
namespace {

using testing::Backend;
using testing::BackendStore;
using testing::MakeSandbox;

// 32 threads increment one counter with read-modify-write and a resourceVersion precondition.
// For every revision exactly one writer wins (no two successful writes read the same revision),
// the losers get Conflict, and no increment is lost.
class StoreConcurrency : public ::testing::TestWithParam<Backend> {};

TEST_P(StoreConcurrency, ThirtyTwoWritersOnOneObject) {
  BackendStore s(GetParam());
  ASSERT_TRUE(s->Create(MakeSandbox("hot", {{"count", "0"}})).ok());
  constexpr int kThreads = 32;
  constexpr int kIncrementsEach = 20;
  std::mutex mu;
  std::set<int64_t> won_from;  // revisions a successful write was based on
  int duplicates = 0;
  std::atomic<int> conflicts{0};
  std::atomic<int> other_errors{0};

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int done = 0; done < kIncrementsEach;) {
        auto cur = s->Get(api::SandboxKind(), "default", "hot");
        if (!cur.ok()) {
          ++other_errors;
          return;
        }
        int64_t read_rv = cur->metadata.resource_version;
        int count = std::stoi(cur->metadata.labels.at("count"));
        cur->metadata.labels["count"] = std::to_string(count + 1);
        auto r = s->Update(*cur);
        if (r.ok()) {
          ++done;
          std::lock_guard lock(mu);
          if (!won_from.insert(read_rv).second) ++duplicates;
        } else if (r.status().code() == StatusCode::kAborted) {
          ++conflicts;
        } else {
          ++other_errors;
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();

  EXPECT_EQ(other_errors.load(), 0);
  EXPECT_EQ(duplicates, 0);
  EXPECT_GT(conflicts.load(), 0);  // 32 writers on 2 cores do collide
  auto final_obj = s->Get(api::SandboxKind(), "default", "hot");
  ASSERT_TRUE(final_obj.ok());
  EXPECT_EQ(final_obj->metadata.labels.at("count"), std::to_string(kThreads * kIncrementsEach));
  EXPECT_EQ(won_from.size(), size_t{kThreads * kIncrementsEach});
}

// Concurrent creates of distinct objects are all kept, with distinct revisions.
TEST_P(StoreConcurrency, ConcurrentCreatesGetDistinctRevisions) {
  BackendStore s(GetParam());
  constexpr int kThreads = 16;
  constexpr int kEach = 25;
  std::mutex mu;
  std::set<int64_t> revisions;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto r = s->Create(MakeSandbox(fmt::format("s-{}-{}", t, i)));
        ASSERT_TRUE(r.ok()) << r.status();
        std::lock_guard lock(mu);
        revisions.insert(r->metadata.resource_version);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(revisions.size(), size_t{kThreads * kEach});
  EXPECT_EQ(*revisions.rbegin(), s->CurrentRevision());
  auto list = s->List(api::SandboxKind(), {});
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->items.size(), size_t{kThreads * kEach});
}

INSTANTIATE_TEST_SUITE_P(, StoreConcurrency, ::testing::Values(Backend::kSqlite, Backend::kEtcd),
                         [](const auto& info) { return testing::BackendName(info.param); });

}  // namespace
}  // namespace warren::store
