#include "trace/span_log.h"

#include <gtest/gtest.h>

#include <sstream>

#include "base/small_file.h"
#include "base/testing/temp_dir.h"
#include "trace/otlp_json.h"

namespace warren::trace {
namespace {

SpanData Named(std::string name) {
  SpanData s;
  s.name = std::move(name);
  s.context = *base::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  s.start_unix_nanos = 1;
  s.end_unix_nanos = 2;
  return s;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(SpanLog, WritesOneDecodableLineASpanAndStartsOverWhenFull) {
  base::testing::TempDir dir;
  const std::string path = dir.path() + "/spans.jsonl";
  const size_t one = EncodeOtlpSpan(Named("a")).size() + 1;
  auto log = SpanLog::Open(path, 3 * one);
  ASSERT_TRUE(log.ok()) << log.status();
  (*log)->Submit(Named("a"));
  (*log)->Submit(Named("b"));
  auto lines = Lines(*base::ReadSmallFile(path));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(DecodeOtlpSpan(lines[0])->name, "a");
  EXPECT_EQ(DecodeOtlpSpan(lines[1])->name, "b");
  (*log)->Submit(Named("c"));
  (*log)->Submit(Named("d"));  // past the bound: the file starts over with it
  lines = Lines(*base::ReadSmallFile(path));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(DecodeOtlpSpan(lines[0])->name, "d");
}

TEST(SpanLog, AnUnwritablePathIsAnError) {
  auto log = SpanLog::Open("/nonexistent-dir/spans.jsonl");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("/nonexistent-dir/spans.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace warren::trace
