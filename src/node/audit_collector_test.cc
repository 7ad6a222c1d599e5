#include "node/audit_collector.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/testing/temp_dir.h"

namespace warren::node {
namespace {

class AuditCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(sandbox_.path() + "/log"); }
  std::string LogPath() const { return sandbox_.path() + "/log/audit.jsonl"; }
  void Write(const std::string& text, bool append = true) {
    std::ofstream(LogPath(), append ? std::ios::app : std::ios::trunc) << text;
  }
  Result<size_t> Collect() { return CollectEnvdAudit(journal_, "team", "sbx", sandbox_.path()); }

  base::testing::TempDir sandbox_, journal_dir_;
  audit::Journal journal_{journal_dir_.path(), {}};
};

TEST_F(AuditCollectorTest, CollectsKnownActionsOnceAndRebuildsThem) {
  Write(R"({"time":"2026-12-04T10:00:00.000Z","action":"process.end","pid":7,"exitCode":3,)"
        R"("cmd":"bash","durationMs":12,"team":"someone-else","secret":"x"})"
        "\n"
        R"({"action":"rm -rf","path":"/"})"
        "\n"
        "not json\n"
        R"({"action":"file.write","path":"/home/user/a")");  // still being written
  ASSERT_EQ(*Collect(), 1u);
  Write("}\n");
  ASSERT_EQ(*Collect(), 1u);
  EXPECT_EQ(*Collect(), 0u) << "collected twice";
  auto entries = journal_.Read("team", "sbx", 10);
  ASSERT_EQ(entries->size(), 2u);
  const auto& end = (*entries)[0];
  EXPECT_EQ(end["source"], "envd");
  EXPECT_EQ(end["team"], "team") << "the sandbox cannot say whose it is";
  EXPECT_EQ(end["exitCode"], 3);
  EXPECT_EQ(end["time"], "2026-12-04T10:00:00.000Z");
  EXPECT_FALSE(end.contains("secret"));
  EXPECT_EQ((*entries)[1]["path"], "/home/user/a");
}

TEST_F(AuditCollectorTest, AFileStartedOverIsReadFromItsBeginning) {
  Write(R"({"action":"file.remove","path":"/a"})"
        "\n");
  ASSERT_EQ(*Collect(), 1u);
  // envd truncated it past its bound and wrote a line: the file is shorter than what was read.
  Write(R"({"action":"file.move","path":"/c"})"
        "\n",
        /*append=*/false);
  ASSERT_EQ(*Collect(), 1u);
  EXPECT_EQ(journal_.Read("team", "sbx", 10)->back()["path"], "/c");
}

TEST_F(AuditCollectorTest, ASymlinkIsNotFollowedAndNoFileIsNothing) {
  EXPECT_EQ(*Collect(), 0u);
  ASSERT_EQ(symlink("/etc/passwd", LogPath().c_str()), 0);
  EXPECT_FALSE(Collect().ok());
}

}  // namespace
}  // namespace warren::node
