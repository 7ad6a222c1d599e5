#include "base/line_index.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace warren::base {
namespace {

UniqueFd MemFile(std::string_view bytes) {
  UniqueFd fd(memfd_create("line-index-test", MFD_CLOEXEC));
  EXPECT_TRUE(fd);
  EXPECT_EQ(write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return fd;
}

// A log and its index built the way envd builds them, one Append per (bytes, stream, time).
struct Log {
  std::string bytes;
  std::string index;
  LineIndexWriter writer;
  void Append(std::string_view b, LogStream s, int64_t ms) {
    bytes += b;
    index += writer.Append(b, s, ms);
  }
  std::vector<std::string> Read(const LogLineQuery& q) {
    UniqueFd log = MemFile(bytes), idx = MemFile(index);
    auto lines = ReadLogLines(log.get(), idx.get(), q, 0);
    EXPECT_TRUE(lines.ok()) << lines.status().ToString();
    std::vector<std::string> out;
    for (const auto& l : *lines) {
      out.push_back(std::to_string(l.unix_ms) + (l.stream == LogStream::kStderr ? "E " : " ") +
                    l.text);
    }
    return out;
  }
};

using Lines = std::vector<std::string>;

TEST(LineIndexTest, StampsEachLineWithWhenItsFirstByteCame) {
  Log log;
  log.Append("one\ntw", LogStream::kStdout, 100);
  log.Append("o\nthree\n", LogStream::kStdout, 200);  // "two" began at 100
  log.Append("oops\n", LogStream::kStderr, 300);
  log.Append("partial", LogStream::kStdout, 400);
  EXPECT_EQ(log.Read({}), (Lines{"100 one", "100 two", "200 three", "300E oops", "400 partial"}));
}

TEST(LineIndexTest, ForwardFromACursorAndBackwardFromOne) {
  Log log;
  for (int i = 1; i <= 5; ++i) log.Append("l" + std::to_string(i) + "\n", LogStream::kStdout, i);
  EXPECT_EQ(log.Read({.cursor_ms = 3, .limit = 2}), (Lines{"3 l3", "4 l4"}));
  EXPECT_EQ(log.Read({.cursor_ms = 3, .backward = true, .limit = 2}), (Lines{"3 l3", "2 l2"}));
  EXPECT_EQ(log.Read({.backward = true, .limit = 2}), (Lines{"5 l5", "4 l4"}));
  EXPECT_EQ(log.Read({.cursor_ms = 9}), Lines{});
  EXPECT_EQ(log.Read({.limit = 0}), Lines{});
}

TEST(LineIndexTest, FiltersByStreamAndSubstringBeforeTheLimit) {
  Log log;
  log.Append("ok a\n", LogStream::kStdout, 1);
  log.Append("bad a\n", LogStream::kStderr, 2);
  log.Append("ok b\n", LogStream::kStdout, 3);
  log.Append("bad b\n", LogStream::kStderr, 4);
  EXPECT_EQ(log.Read({.limit = 1, .stderr_only = true}), (Lines{"2E bad a"}));
  EXPECT_EQ(log.Read({.limit = 5, .search = "b"}), (Lines{"2E bad a", "3 ok b", "4E bad b"}));
}

TEST(LineIndexTest, CutsLongLinesAndGoesOnAfterARestartedWriter) {
  Log log;
  log.Append(std::string(kMaxLogLine + 10, 'x') + "\n", LogStream::kStdout, 1);
  LineIndexWriter resumed;
  resumed.ResumeAt(log.bytes.size());
  log.bytes += "after\n";
  log.index += resumed.Append("after\n", LogStream::kStdout, 2);
  auto lines = log.Read({});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].size(), std::string("1 ").size() + kMaxLogLine);
  EXPECT_EQ(lines[1], "2 after");
}

TEST(LineIndexTest, AHostileIndexYieldsNoBytesOutsideTheLog) {
  Log log;
  log.Append("a\nb\n", LogStream::kStdout, 1);
  // Records pointing past the log, backwards, and a torn last record.
  LineIndexWriter far;
  far.ResumeAt(1 << 30);
  log.index += far.Append("zz\n", LogStream::kStdout, 2);
  log.index += std::string(16, '\0');
  log.index += "torn";
  EXPECT_EQ(log.Read({}), (Lines{"1 a"}));
}

TEST(LineIndexTest, WithoutAnIndexTheLogIsOneBatchStampedAsGiven) {
  UniqueFd log = MemFile("x\ny\n");
  auto lines = ReadLogLines(log.get(), -1, {.backward = true, .limit = 1}, 42);
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0].text, "y");
  EXPECT_EQ((*lines)[0].unix_ms, 42);
}

}  // namespace
}  // namespace warren::base
