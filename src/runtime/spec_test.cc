#include "runtime/spec.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

namespace warren::runtime {
namespace {

using ::testing::HasSubstr;

SandboxSpec Good() {
  SandboxSpec s;
  s.id = "i0123456789abcdefghij";
  s.layers = {"/var/lib/warren/layers/a", "/var/lib/warren/layers/b"};
  s.writable_dir = "/var/lib/warren/rw/x";
  s.command = {"/usr/local/bin/warren-envd", "--port", "49983"};
  s.env = {"PATH=/usr/bin:/bin", "EMPTY="};
  s.mounts = {BindMount{"/usr/lib/warren/warren-envd", "/usr/local/bin/warren-envd", true}};
  s.resources = Resources{500, 512 << 20, 256};
  return s;
}

void ExpectInvalid(const SandboxSpec& s, const std::string& says) {
  Status st = ValidateSpec(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
  EXPECT_THAT(st.message(), HasSubstr(says));
}

TEST(SpecTest, AGoodSpecPasses) { EXPECT_TRUE(ValidateSpec(Good()).ok()); }

TEST(SpecTest, IdsAreDnsLabels) {
  EXPECT_TRUE(IsValidSandboxName("a"));
  EXPECT_TRUE(IsValidSandboxName("sb-1"));
  EXPECT_FALSE(IsValidSandboxName(""));
  EXPECT_FALSE(IsValidSandboxName("-a"));
  EXPECT_FALSE(IsValidSandboxName("a-"));
  EXPECT_FALSE(IsValidSandboxName("A"));
  EXPECT_FALSE(IsValidSandboxName("a/b"));
  EXPECT_FALSE(IsValidSandboxName(".idmap"));
  EXPECT_FALSE(IsValidSandboxName(std::string(64, 'a')));
  SandboxSpec s = Good();
  s.id = "../etc";
  ExpectInvalid(s, "sandbox id '../etc'");
}

TEST(SpecTest, SubPathsAreRelativeWithoutDotDot) {
  SandboxSpec s = Good();
  s.mounts.push_back(BindMount{"/srv/vol", "/data", false, "a/b..c/d"});
  EXPECT_TRUE(ValidateSpec(s).ok());
  for (const char* bad : {"/etc", "..", "a/../..", "a/.."}) {
    s.mounts.back().sub_path = bad;
    ExpectInvalid(s, fmt::format("subPath '{}' must be relative", bad));
  }
}

TEST(SpecTest, PathsMustBeAbsoluteWithoutDotDot) {
  SandboxSpec s = Good();
  s.layers = {};
  ExpectInvalid(s, "no image layers");
  s = Good();
  s.layers.push_back("layers/c");
  ExpectInvalid(s, "image layer 'layers/c' must be an absolute path");
  s = Good();
  s.writable_dir = "/var/lib/../../etc";
  ExpectInvalid(s, "writable_dir");
  s = Good();
  s.working_dir = "home";
  ExpectInvalid(s, "working_dir");
  s = Good();
  s.mounts[0].target = "/";
  ExpectInvalid(s, "must not be '/'");
  s = Good();
  s.mounts[0].target = "/usr/../../x";
  ExpectInvalid(s, "'..'");
  s = Good();
  s.log_path = "log.txt";
  ExpectInvalid(s, "log_path");
  s = Good();
  s.layers[0] += std::string("\0x", 2);
  ExpectInvalid(s, "NUL");
}

TEST(SpecTest, CommandAndEnvironment) {
  SandboxSpec s = Good();
  s.command.clear();
  ExpectInvalid(s, "empty command");
  s = Good();
  s.command[0].clear();
  ExpectInvalid(s, "empty command");
  s = Good();
  s.env.push_back("=value");
  ExpectInvalid(s, "is not KEY=VALUE");
  s = Good();
  s.env.push_back("SECRET_TOKEN_WITHOUT_EQUALS_abcdefghijklmnopqrstuvwxyz0123456789abcdefghij");
  Status st = ValidateSpec(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_LT(st.message().size(), 200u) << "no full echo of environment entries";
}

TEST(SpecTest, LimitsOutsideWhatTheKernelCanDoAreRefused) {
  for (Resources r :
       {Resources{5, 0, 0}, Resources{-1, 0, 0}, Resources{2'000'000, 0, 0}, Resources{0, 4095, 0},
        Resources{0, -1, 0}, Resources{0, 0, 1}, Resources{0, 0, -3}, Resources{0, 0, 5'000'000}}) {
    SandboxSpec s = Good();
    s.resources = r;
    EXPECT_EQ(ValidateSpec(s).code(), StatusCode::kInvalidArgument)
        << r.cpu_millicores << " " << r.memory_bytes << " " << r.pids;
  }
  SandboxSpec s = Good();
  s.resources = Resources{0, 0, 0};
  EXPECT_TRUE(ValidateSpec(s).ok()) << "zero means unlimited";
  s.resources = Resources{10, 4 << 20, 2};
  EXPECT_TRUE(ValidateSpec(s).ok()) << "the smallest possible limits";
}

TEST(SpecTest, UsersAndRlimits) {
  SandboxSpec s = Good();
  s.user.uid = UINT32_MAX;
  ExpectInvalid(s, "4294967295");
  s = Good();
  s.rlimits.push_back(os::Rlimit{RLIMIT_NOFILE, 100, 10});
  ExpectInvalid(s, "RLIMIT_NOFILE");
}

}  // namespace
}  // namespace warren::runtime
