#include "runtime/native/state_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

namespace warren::runtime::native {
namespace {

using ::testing::HasSubstr;

SandboxRecord Sample() {
  SandboxRecord r;
  r.spec.id = "sb1";
  r.spec.layers = {"/l/a", "/l/b"};
  r.spec.writable_dir = "/rw/sb1";
  r.spec.command = {"/bin/sh", "-c", "echo \"quoted\" 'and' \\backslash\n"};
  r.spec.env = {"A=1", "B=two words"};
  r.spec.working_dir = "/tmp";
  r.spec.user = User{1000, 1000, {10, 20}};
  r.spec.mounts = {BindMount{"/src", "/dst", false}, BindMount{"/vol", "/sub", true, "a/b"}};
  r.spec.resources = Resources{250, 64 << 20, 32};
  r.spec.user_namespace = true;
  r.spec.rlimits = {os::Rlimit{RLIMIT_NOFILE, 512, 1024}};
  r.spec.log_path = "/logs/sb1.log";
  r.state = SandboxState::kPaused;
  r.pid = 4242;
  r.start_time = 987654321;
  r.boot_id = "0b9e6d1c-0000-4000-8000-000000000000";
  r.cgroup_version = "v1";
  r.created_writable_dir = true;
  r.created_at = base::WallTime(std::chrono::seconds(1'800'000'000));
  r.started_at = base::WallTime(std::chrono::seconds(1'800'000'100));
  r.last_exit = ExitStatus{3, 0, true, false};
  r.oom_kills_at_start = 2;
  return r;
}

TEST(StateRecordTest, RoundTripsEveryField) {
  SandboxRecord r = Sample();
  auto back = DecodeRecord(EncodeRecord(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->spec.command, r.spec.command);
  EXPECT_EQ(back->spec.env, r.spec.env);
  EXPECT_EQ(back->spec.layers, r.spec.layers);
  EXPECT_EQ(back->spec.user.supplementary_gids, r.spec.user.supplementary_gids);
  EXPECT_EQ(back->spec.mounts[0].read_only, false);
  ASSERT_EQ(back->spec.mounts.size(), 2u);
  EXPECT_EQ(back->spec.mounts[0].sub_path, "");
  EXPECT_EQ(back->spec.mounts[1].sub_path, "a/b");
  EXPECT_EQ(back->spec.resources.memory_bytes, 64 << 20);
  EXPECT_EQ(back->spec.rlimits, r.spec.rlimits);
  EXPECT_TRUE(back->spec.user_namespace);
  EXPECT_EQ(back->state, SandboxState::kPaused);
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->start_time, 987654321u);
  EXPECT_EQ(back->boot_id, r.boot_id);
  EXPECT_EQ(back->created_at, r.created_at);
  EXPECT_EQ(back->started_at, r.started_at);
  ASSERT_TRUE(back->last_exit.has_value());
  EXPECT_EQ(back->last_exit->exit_code, 3);
  EXPECT_TRUE(back->last_exit->oom_killed);
  EXPECT_EQ(back->oom_kills_at_start, 2u);
}

TEST(StateRecordTest, DamagedRecordsAreDataLoss) {
  for (std::string text :
       {std::string("{not json"), std::string("[]"), std::string("{\"version\": 2}"),
        std::string("{\"version\": 1}"),
        std::string("{\"version\":1,\"state\":\"running\",\"spec\":{\"id\":\"x\"}}")}) {
    auto r = DecodeRecord(text);
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << text;
  }
  std::string bad_state = EncodeRecord(Sample());
  bad_state.replace(bad_state.find("\"paused\""), 8, "\"dancing\"");
  EXPECT_EQ(DecodeRecord(bad_state).status().code(), StatusCode::kDataLoss);
  SandboxRecord r = Sample();
  r.spec.id = "Not Valid";
  auto invalid = DecodeRecord(EncodeRecord(r));
  EXPECT_EQ(invalid.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(invalid.status().message(), HasSubstr("invalid spec"));
}

}  // namespace
}  // namespace warren::runtime::native
