#include "node/envd_span_collector.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/testing/temp_dir.h"
#include "trace/otlp_json.h"
#include "trace/testing/collecting_sink.h"

namespace warren::node {
namespace {

trace::SpanData EnvdSpan(std::string name) {
  trace::SpanData s;
  s.name = std::move(name);
  s.context = *base::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  s.parent_span_id = {1, 2, 3, 4, 5, 6, 7, 8};
  s.has_parent = true;
  s.kind = trace::SpanKind::kServer;
  s.start_unix_nanos = 1;
  s.end_unix_nanos = 2;
  return s;
}

class EnvdSpanCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(sandbox_.path() + "/log"); }
  std::string LogPath() const { return sandbox_.path() + "/log/spans.jsonl"; }
  void Write(const std::string& text, bool append = true) {
    std::ofstream(LogPath(), append ? std::ios::app : std::ios::trunc) << text;
  }
  Result<size_t> Collect() { return CollectEnvdSpans("sbx", sandbox_.path()); }

  base::testing::TempDir sandbox_;
};

TEST_F(EnvdSpanCollectorTest, ForwardsDecodableSpansOnceAsTheSandboxs) {
  trace::testing::CollectingSink sink;
  trace::SpanData posing = EnvdSpan("envd POST /init");
  posing.attributes = {{"warren.sandbox_id", std::string("another-sandbox")}};
  const std::string partial = trace::EncodeOtlpSpan(EnvdSpan("envd GET /files"));
  Write(trace::EncodeOtlpSpan(posing) + "\nnot a span\n{\"name\":\"x\"}\n" +
        partial.substr(0, 20));  // the last one still being written
  ASSERT_EQ(*Collect(), 1u);
  Write(partial.substr(20) + "\n");
  ASSERT_EQ(*Collect(), 1u);
  EXPECT_EQ(*Collect(), 0u) << "forwarded twice";
  auto spans = sink.spans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].name, "envd POST /init");
  EXPECT_EQ(spans[1].name, "envd GET /files");
  for (const auto& s : spans) {
    EXPECT_EQ(s.service, "warren-envd") << "never the host's own service";
    ASSERT_EQ(s.attributes.size(), 1u);
    EXPECT_EQ(s.attributes[0].first, "warren.sandbox_id");
    EXPECT_EQ(s.attributes[0].second, trace::AttributeValue(std::string("sbx")))
        << "the sandbox cannot say whose it is";
  }
}

// The node restarted: what was forwarded before is not forwarded again; a file envd started
// over is read from its beginning.
TEST_F(EnvdSpanCollectorTest, RemembersWhereItStoppedAcrossRestartsAndFilesStartedOver) {
  trace::testing::CollectingSink sink;
  Write(trace::EncodeOtlpSpan(EnvdSpan("a")) + "\n" + trace::EncodeOtlpSpan(EnvdSpan("b")) + "\n");
  ASSERT_EQ(*Collect(), 2u);
  EXPECT_EQ(*Collect(), 0u);
  Write(trace::EncodeOtlpSpan(EnvdSpan("c")) + "\n", /*append=*/false);
  ASSERT_EQ(*Collect(), 1u);
  EXPECT_EQ(sink.spans().back().name, "c");
}

TEST_F(EnvdSpanCollectorTest, NothingWhenTracingIsOffOrNoFileAndNoSymlinkFollowed) {
  Write(trace::EncodeOtlpSpan(EnvdSpan("a")) + "\n");
  EXPECT_EQ(*Collect(), 0u) << "tracing off";
  trace::testing::CollectingSink sink;
  std::filesystem::remove(LogPath());
  EXPECT_EQ(*Collect(), 0u);
  ASSERT_EQ(symlink("/etc/passwd", LogPath().c_str()), 0);
  EXPECT_FALSE(Collect().ok());
  EXPECT_TRUE(sink.spans().empty());
}

}  // namespace
}  // namespace warren::node
