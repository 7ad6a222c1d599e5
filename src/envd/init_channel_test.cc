#include "envd/init_channel.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "base/small_file.h"
#include "base/testing/temp_dir.h"
#include "envd/envd_state.h"

namespace warren::envd {
namespace {

class InitChannelTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(CreateInitChannel(dir_, getuid()).ok()); }

  // An envd whose command line gave it `birth` as token, following the channel.
  std::unique_ptr<EnvdState> Follow(EnvdState::UserCheck users = nullptr) {
    EnvdDefaults d;
    d.access_token = "birth";
    d.default_user = "root";
    auto state = std::make_unique<EnvdState>(d);
    auto reader = InitChannelReader::Open(dir_);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    if (reader.ok()) state->FollowInitChannel(std::move(reader).value(), std::move(users));
    return state;
  }
  Status Write(std::string_view json) { return WriteInitChannel(dir_, json, getuid()); }

  base::testing::TempDir tmp_;
  std::string dir_ = tmp_.path() + "/init";
};

TEST_F(InitChannelTest, TheNextReadOfTheSettingsHoldsWhatTheNodeWrote) {
  auto state = Follow();
  EXPECT_EQ(state->access_token(), "birth");
  ASSERT_TRUE(Write(R"({"accessToken":"t1","envVars":{"A":"1"},"defaultUser":"user"})").ok());
  EXPECT_EQ(state->access_token(), "t1");
  EXPECT_EQ(state->env_vars().at("A"), "1");
  EXPECT_EQ(state->default_user(), "user");
  // A second body is applied as a second /init: env vars merge, the token is replaced.
  ASSERT_TRUE(Write(R"({"accessToken":"t2","envVars":{"B":"2"}})").ok());
  EXPECT_EQ(state->access_token(), "t2");
  EXPECT_EQ(state->env_vars().at("A"), "1");
  EXPECT_EQ(state->env_vars().at("B"), "2");
}

TEST_F(InitChannelTest, AnEnvdThatStartsAfterTheWriteHoldsItFromItsStart) {
  ASSERT_TRUE(Write(R"({"accessToken":"claimed"})").ok());
  EXPECT_EQ(Follow()->access_token(), "claimed");
}

TEST_F(InitChannelTest, TheBodyIsReadOnlyWhenTheGenerationChanged) {
  auto state = Follow();
  ASSERT_TRUE(Write(R"({"accessToken":"t1"})").ok());
  EXPECT_EQ(state->access_token(), "t1");
  // A body replaced without a new generation is not seen: no request pays for a read.
  {
    std::ofstream out(dir_ + "/" + kInitChannelBody, std::ios::trunc);
    out << R"({"accessToken":"behind-its-back"})";
  }
  EXPECT_EQ(state->access_token(), "t1");
  ASSERT_TRUE(Write(R"({"accessToken":"t3"})").ok());
  EXPECT_EQ(state->access_token(), "t3");
}

TEST_F(InitChannelTest, NoBodyLeavesTheStartingSettings) {
  ASSERT_TRUE(Write(R"({"accessToken":"old-tenant","envVars":{"SECRET":"x"}})").ok());
  ASSERT_TRUE(Write("").ok());  // what a reset does before envd starts afresh
  auto fresh = Follow();
  EXPECT_EQ(fresh->access_token(), "birth");
  EXPECT_EQ(fresh->env_vars().count("SECRET"), 0u);
}

TEST_F(InitChannelTest, ABodyThatDoesNotParseClosesEnvdUntilOneDoes) {
  auto state = Follow();
  ASSERT_TRUE(Write(R"({"accessToken":"t1"})").ok());
  ASSERT_TRUE(Write("{not json").ok());
  auto token = state->access_token();
  ASSERT_TRUE(token.has_value());
  EXPECT_NE(*token, "t1");
  EXPECT_NE(*token, "birth");
  ASSERT_TRUE(Write(R"({"accessToken":"t2"})").ok());
  EXPECT_EQ(state->access_token(), "t2");
}

TEST_F(InitChannelTest, AnUnknownDefaultUserIsLeftOutAndTheRestApplied) {
  auto state = Follow([](const std::string& name) {
    return name == "user" ? Status::Ok() : NotFoundError("no such user " + name);
  });
  ASSERT_TRUE(Write(R"({"accessToken":"t1","defaultUser":"ghost"})").ok());
  EXPECT_EQ(state->access_token(), "t1");
  EXPECT_EQ(state->default_user(), "root");
}

TEST_F(InitChannelTest, AnInitByRequestAfterTheChannelWinsOverIt) {
  auto state = Follow();
  ASSERT_TRUE(Write(R"({"accessToken":"by-channel"})").ok());
  InitRequest later;
  later.access_token = "by-request";
  state->ApplyInit(later, true);
  EXPECT_EQ(state->access_token(), "by-request");
}

TEST_F(InitChannelTest, OnlyItsOwnerMayReadIt) {
  ASSERT_TRUE(Write(R"({"accessToken":"t1"})").ok());
  for (const std::string& path :
       {dir_ + "/" + kInitChannelBody, dir_ + "/" + kInitChannelGeneration}) {
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << path;
    EXPECT_EQ(st.st_uid, getuid()) << path;
  }
  struct stat st {};
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(InitChannelTest, CreatingAgainKeepsTheBody) {
  ASSERT_TRUE(Write(R"({"accessToken":"t1"})").ok());
  ASSERT_TRUE(CreateInitChannel(dir_, getuid()).ok());
  EXPECT_EQ(Follow()->access_token(), "t1");
}

TEST(InitChannelReaderTest, OpenNamesWhatIsWrong) {
  base::testing::TempDir tmp;
  auto missing = InitChannelReader::Open(tmp.path() + "/none");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  ASSERT_EQ(mkdir((tmp.path() + "/short").c_str(), 0700), 0);
  { std::ofstream(tmp.path() + "/short/" + kInitChannelGeneration) << "abc"; }
  auto shorter = InitChannelReader::Open(tmp.path() + "/short");
  ASSERT_FALSE(shorter.ok());
  EXPECT_EQ(shorter.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(shorter.status().message().find("generation"), std::string::npos);
}

TEST(InitChannelWriterTest, WritingWithoutAChannelFails) {
  base::testing::TempDir tmp;
  ASSERT_EQ(mkdir((tmp.path() + "/plain").c_str(), 0700), 0);
  Status s = WriteInitChannel(tmp.path() + "/plain", R"({"accessToken":"x"})", getuid());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("generation"), std::string::npos);
}

}  // namespace
}  // namespace warren::envd
