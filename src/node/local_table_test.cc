#include "node/local_table.h"

#include <gtest/gtest.h>

#include <future>

namespace warren::node {
namespace {

LocalSandbox Entry(const std::string& id, const std::string& uid) {
  LocalSandbox l;
  l.id = id;
  l.uid = uid;
  l.key = "default/" + id;
  return l;
}

TEST(LocalTable, EntriesAreReachedOnlyThroughTheLockAndErasedOnlyForTheirIncarnation) {
  LocalTable table;
  table.Put(Entry("a", "uid-1"));
  EXPECT_TRUE(table.With("a", [](LocalSandbox& l) { l.ready = true; }));
  bool ready = false;
  EXPECT_TRUE(table.With("a", [&](const LocalSandbox& l) { ready = l.ready; }));
  EXPECT_TRUE(ready);
  EXPECT_FALSE(table.With("b", [](LocalSandbox&) { ADD_FAILURE() << "called for a missing id"; }));

  // A stale uid (an older object of the same name) does not remove the new incarnation.
  table.Put(Entry("a", "uid-2"));
  EXPECT_FALSE(table.Erase("a", "uid-1"));
  EXPECT_TRUE(table.Contains("a"));
  EXPECT_TRUE(table.Erase("a", "uid-2"));
  EXPECT_FALSE(table.Contains("a"));
}

TEST(LocalTable, AnEventLoopNeverWaitsForTheLock) {
  LocalTable table;
  table.Put(Entry("a", "uid-1"));
  std::promise<void> inside, release;
  auto holder = std::async(std::launch::async, [&] {
    table.With("a", [&](LocalSandbox&) {
      inside.set_value();
      release.get_future().wait();
    });
  });
  inside.get_future().wait();
  EXPECT_EQ(table.TryWith("a", [](const LocalSandbox&) {}), std::nullopt);
  release.set_value();
  holder.get();
  EXPECT_EQ(table.TryWith("a", [](const LocalSandbox&) {}), std::optional<bool>(true));
  EXPECT_EQ(table.TryWith("zz", [](const LocalSandbox&) {}), std::optional<bool>(false));
}

}  // namespace
}  // namespace warren::node
