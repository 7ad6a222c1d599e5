#include "node/local_table.h"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

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

TEST(LocalTable, EntriesOfAnObjectAreFoundByItsKeyAsTheyComeAndGo) {
  LocalTable table;
  auto ids_of = [&](const std::string& key) {
    std::vector<std::string> ids;
    table.ForEachOfKey(key, [&](const LocalSandbox& l) { ids.push_back(l.id + "@" + l.uid); });
    return ids;
  };
  // An older object's sandbox still being destroyed beside the new object's under the same name.
  LocalSandbox old_one = Entry("old", "uid-1");
  old_one.key = "default/box";
  LocalSandbox new_one = Entry("new", "uid-2");
  new_one.key = "default/box";
  table.Put(old_one);
  table.Put(new_one);
  table.Put(Entry("other", "uid-3"));
  EXPECT_EQ(ids_of("default/box"), (std::vector<std::string>{"new@uid-2", "old@uid-1"}));
  EXPECT_TRUE(ids_of("default/nothing").empty());

  // Replacing an entry under another key moves it; erasing one leaves the other.
  LocalSandbox moved = Entry("old", "uid-4");
  moved.key = "team/box";
  table.Put(moved);
  EXPECT_EQ(ids_of("default/box"), (std::vector<std::string>{"new@uid-2"}));
  EXPECT_EQ(ids_of("team/box"), (std::vector<std::string>{"old@uid-4"}));
  EXPECT_FALSE(table.Erase("new", "uid-9"));  // another incarnation: stays indexed
  EXPECT_EQ(ids_of("default/box").size(), 1u);
  EXPECT_TRUE(table.Erase("new", "uid-2"));
  EXPECT_TRUE(ids_of("default/box").empty());
  EXPECT_EQ(ids_of("default/other"), (std::vector<std::string>{"other@uid-3"}));
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
