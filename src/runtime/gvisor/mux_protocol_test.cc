#include "runtime/gvisor/mux_protocol.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/gvisor/oci_config.h"

namespace warren::runtime::gvisor {
namespace {

using mux::Frame;
using mux::FrameDecoder;
using mux::FrameType;

TEST(MuxProtocol, FramesSurviveAnySplit) {
  std::string wire;
  mux::AppendFrame(wire, FrameType::kOpen, 7, std::string("\xc3\x4f", 2));
  mux::AppendFrame(wire, FrameType::kData, 7, "hello");
  mux::AppendFrame(wire, FrameType::kEof, 7, "");
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    FrameDecoder d;
    std::vector<Frame> got;
    Frame f;
    d.Feed(wire.data(), cut);
    while (d.Pop(f) == FrameDecoder::Next::kFrame) got.push_back(f);
    d.Feed(wire.data() + cut, wire.size() - cut);
    while (d.Pop(f) == FrameDecoder::Next::kFrame) got.push_back(f);
    ASSERT_EQ(got.size(), 3u) << "cut at " << cut;
    EXPECT_EQ(got[0].type, FrameType::kOpen);
    EXPECT_EQ(got[0].stream, 7u);
    EXPECT_EQ(got[0].payload, std::string("\xc3\x4f", 2));
    EXPECT_EQ(got[1].payload, "hello");
    EXPECT_EQ(got[2].type, FrameType::kEof);
  }
}

TEST(MuxProtocol, RefusesUnknownTypesAndOversizedFrames) {
  FrameDecoder d;
  std::string bad(mux::kHeaderSize, '\0');
  bad[0] = 42;
  d.Feed(bad.data(), bad.size());
  Frame f;
  EXPECT_EQ(d.Pop(f), FrameDecoder::Next::kError);
  EXPECT_NE(d.error().find("unknown frame type 42"), std::string::npos);

  FrameDecoder big;
  std::string head;
  head.push_back(static_cast<char>(FrameType::kData));
  head += mux::U32(1) + mux::U32(mux::kMaxPayload + 1);
  big.Feed(head.data(), head.size());
  EXPECT_EQ(big.Pop(f), FrameDecoder::Next::kError);
  EXPECT_EQ(big.Pop(f), FrameDecoder::Next::kError) << "a failed channel stays failed";
}

TEST(OciConfig, RunsTheCommandUnderTheInitWithTheSpecsLimits) {
  SandboxSpec spec;
  spec.id = "sbx";
  spec.command = {"/.warren/envd", "--listen", "0.0.0.0:49983"};
  spec.env = {"PATH=/bin"};
  spec.working_dir = "/work";
  spec.user = {1000, 1000, {10}};
  spec.resources.memory_bytes = 128 << 20;
  spec.resources.cpu_millicores = 500;
  spec.mounts = {BindMount{"/host/vol", "/data", false, "sub"}};
  OciHost host{"/state/sbx/rootfs",
               "/bin/warren-gvisor-init",
               "/warren-gvisor/sbx",
               4096,
               {"/host/vol/sub"}};
  auto j = nlohmann::json::parse(BuildOciConfig(spec, host));
  EXPECT_EQ(j["process"]["args"][0], kInitInSandbox);
  EXPECT_EQ(j["process"]["args"][2], "--unset") << "no HOME in the spec: runsc's goes";
  EXPECT_EQ(j["process"]["args"][5], "/.warren/envd");
  EXPECT_EQ(j["process"]["cwd"], "/work");
  EXPECT_EQ(j["process"]["user"]["uid"], 1000);
  EXPECT_TRUE(j["process"]["capabilities"]["effective"].empty()) << "none for non-root users";
  EXPECT_EQ(j["root"]["path"], "/state/sbx/rootfs");
  EXPECT_EQ(j["hostname"], "sbx");
  EXPECT_EQ(j["linux"]["cgroupsPath"], "/warren-gvisor/sbx");
  EXPECT_EQ(j["linux"]["resources"]["memory"]["limit"], 128 << 20);
  EXPECT_EQ(j["linux"]["resources"]["cpu"]["quota"], 50000);
  EXPECT_FALSE(j["linux"]["resources"].contains("pids"));
  bool data = false;
  for (const auto& m : j["mounts"]) {
    if (m["destination"] == "/data") {
      data = true;
      EXPECT_EQ(m["source"], "/host/vol/sub");
      EXPECT_EQ(m["options"][1], "rw");
    }
  }
  EXPECT_TRUE(data);
  const std::string dump = j.dump();
  EXPECT_EQ(dump.find("CAP_MKNOD"), std::string::npos);
  EXPECT_EQ(dump.find("CAP_NET_RAW"), std::string::npos);
}

TEST(OciConfig, RunscIdsHaveOneLength) {
  EXPECT_EQ(RunscId("a").size(), 32u);
  EXPECT_EQ(RunscId("i0123456789abcdefghij").size(), 32u);
  EXPECT_NE(RunscId("gvpy"), RunscId("gvpyc1"));
  EXPECT_NE(RunscId("gvpyc1").rfind(RunscId("gvpy"), 0), 0u);
}

}  // namespace
}  // namespace warren::runtime::gvisor
