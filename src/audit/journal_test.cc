#include "audit/journal.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "base/testing/temp_dir.h"

namespace warren::audit {
namespace {

TEST(JournalTest, AppendsAndReadsTheNewestOldestFirst) {
  base::testing::TempDir dir;
  Journal j(dir.path(), {});
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(j.Append("team-a", "sbx1", {{"action", "n"}, {"i", i}}).ok());
  }
  auto all = j.Read("team-a", "sbx1", 100);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ((*all)[0]["i"], 0);
  EXPECT_TRUE((*all)[0]["time"].is_string());
  auto last = j.Read("team-a", "sbx1", 2);
  ASSERT_EQ(last->size(), 2u);
  EXPECT_EQ((*last)[0]["i"], 3);
  EXPECT_EQ(j.Read("team-b", "sbx1", 10).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(j.NamespaceOf("sbx1"), "team-a");
  EXPECT_EQ(j.NamespaceOf("nope"), std::nullopt);
  // Owner-only: the journal says what a team's agents ran.
  struct stat st {};
  ASSERT_EQ(stat((dir.path() + "/team-a/sbx1.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(JournalTest, PostedEntriesAreReadBackAtOnceAndWrittenBeforeItGoes) {
  base::testing::TempDir dir;
  {
    Journal j(dir.path(), {});
    for (int i = 0; i < 100; ++i) j.Post("t", "s" + std::to_string(i % 3), {{"i", i}});
    auto s0 = j.Read("t", "s0", 1000);
    ASSERT_TRUE(s0.ok());
    EXPECT_EQ(s0->size(), 34u);
    EXPECT_EQ(s0->back()["i"], 99);
    EXPECT_EQ(j.NamespaceOf("s2"), "t");
    for (int i = 0; i < 50; ++i) j.Post("t", "late", {{"i", i}});
    j.Post("..", "bad", {{"i", 0}});  // refused by the writer, logged; nothing else harmed
  }
  EXPECT_EQ(Journal(dir.path(), {}).Read("t", "late", 1000)->size(), 50u);
}

TEST(JournalTest, RefusesNamesThatAreNotFileNames) {
  base::testing::TempDir dir;
  Journal j(dir.path(), {});
  for (const char* bad : {"..", "a/b", "", ".", "x y"}) {
    EXPECT_EQ(j.Append("team", bad, {{"action", "n"}}).code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(j.Append(bad, "id", {{"action", "n"}}).code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(j.Append("team", "id", nlohmann::json::array()).code(), StatusCode::kInvalidArgument);
}

TEST(JournalTest, StaysWithinItsBoundKeepingTheNewestAndCutsLongFields) {
  base::testing::TempDir dir;
  Journal j(dir.path(), {.max_bytes = 4096});
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(j.Append("t", "s", {{"i", i}}).ok());
  EXPECT_LE(std::filesystem::file_size(dir.path() + "/t/s.jsonl"), 4096u);
  struct stat st {};
  ASSERT_EQ(stat((dir.path() + "/t/s.jsonl").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "a trim must not widen the mode";
  auto kept = j.Read("t", "s", 1000);
  ASSERT_FALSE(kept->empty());
  EXPECT_EQ(kept->back()["i"], 199);
  ASSERT_TRUE(j.Append("t", "long", {{"cmd", std::string(kMaxField * 2, 'x')}}).ok());
  EXPECT_EQ((*j.Read("t", "long", 1))[0]["cmd"].get<std::string>().size(), kMaxField);
}

TEST(JournalTest, HowMuchEnvdWritesNeverPushesOutTheHostsEntries) {
  base::testing::TempDir dir;
  Journal j(dir.path(), {.max_bytes = 4096});
  ASSERT_TRUE(j.Append("t", "s", {{"source", "api"}, {"action", "create"}}).ok());
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(j.Append("t", "s", {{"source", "envd"}, {"action", "file.write"}, {"i", i}}).ok());
  }
  auto all = j.Read("t", "s", 1000);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->front()["action"], "create");
  EXPECT_EQ(all->back()["i"], 499);
  EXPECT_FALSE(j.Append("t", "x.envd", {{"action", "n"}}).ok()) << "would alias an envd file";
}

TEST(JournalTest, ATornLastLineIsIgnoredAndOffsetsPersist) {
  base::testing::TempDir dir;
  Journal j(dir.path(), {});
  ASSERT_TRUE(j.Append("t", "s", {{"i", 1}}).ok());
  std::ofstream(dir.path() + "/t/s.jsonl", std::ios::app) << "{\"i\": 2";
  EXPECT_EQ(j.Read("t", "s", 10)->size(), 1u);
  EXPECT_EQ(j.CollectedOffset("t", "s"), 0u);
  j.SetCollectedOffset("t", "s", 1234);
  EXPECT_EQ(Journal(dir.path(), {}).CollectedOffset("t", "s"), 1234u);
}

TEST(JournalTest, SweepRemovesOnlyJournalsIdleBeyondTheRetention) {
  base::testing::TempDir dir;
  Journal j(dir.path(), {.retention = std::chrono::hours(1)});
  ASSERT_TRUE(j.Append("t", "old", {{"i", 1}}).ok());
  ASSERT_TRUE(j.Append("t", "new", {{"i", 1}}).ok());
  std::filesystem::last_write_time(
      dir.path() + "/t/old.jsonl",
      std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
  EXPECT_EQ(j.Sweep(), 1u);
  EXPECT_EQ(j.Read("t", "old", 1).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(j.Read("t", "new", 1).ok());
}

}  // namespace
}  // namespace warren::audit
