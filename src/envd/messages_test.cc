#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "envd/filesystem_messages.h"
#include "envd/process_messages.h"

namespace warren::envd {
namespace {

using nlohmann::json;

TEST(ProcessMessagesTest, ParsesStartAsTheJsSdkSendsIt) {
  auto r = ParseStartRequest(
      R"({"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"],"envs":{"A":"1"},"cwd":"/tmp"},"stdin":false})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->process.cmd, "/bin/bash");
  EXPECT_EQ(r->process.args, (std::vector<std::string>{"-l", "-c", "echo hi"}));
  EXPECT_EQ(r->process.envs.at("A"), "1");
  EXPECT_EQ(r->process.cwd, "/tmp");
  ASSERT_TRUE(r->stdin.has_value());  // optional presence: explicit false is kept
  EXPECT_FALSE(*r->stdin);
  EXPECT_FALSE(r->pty.has_value());
}

TEST(ProcessMessagesTest, AbsentOptionalsStayAbsentAndNullIsDefault) {
  auto r = ParseStartRequest(R"({"process":{"cmd":"ls","cwd":null},"tag":null})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->stdin.has_value());
  EXPECT_FALSE(r->process.cwd.has_value());
  EXPECT_FALSE(r->tag.has_value());
}

TEST(ProcessMessagesTest, PtySizeAcceptsNumbersAsStrings) {
  auto r =
      ParseStartRequest(R"({"process":{"cmd":"bash"},"pty":{"size":{"cols":"100","rows":30}}})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->pty);
  EXPECT_EQ(r->pty->cols, 100u);
  EXPECT_EQ(r->pty->rows, 30u);
}

TEST(ProcessMessagesTest, InputBytesAcceptStandardAndUrlSafeBase64) {
  auto a = ParseSendInputRequest(R"({"process":{"pid":321},"input":{"stdin":"YWJj"}})");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, InputKind::kStdin);
  EXPECT_EQ(a->data, "abc");
  EXPECT_EQ(*a->process.pid, 321u);
  auto b = ParseSendInputRequest(R"({"process":{"pid":1},"input":{"pty":"-_8"}})");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->kind, InputKind::kPty);
  EXPECT_EQ(b->data, "\xfb\xff");
  auto bad = ParseSendInputRequest(R"({"process":{"pid":1},"input":{"stdin":"%%%"}})");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("stdin"), std::string::npos);
}

TEST(ProcessMessagesTest, SignalsByNameOrNumber) {
  auto byname = ParseSendSignalRequest(R"({"process":{"pid":5},"signal":"SIGNAL_SIGKILL"})");
  ASSERT_TRUE(byname.ok());
  EXPECT_EQ(byname->signal, SIGKILL);
  auto bynumber = ParseSendSignalRequest(R"({"process":{"pid":5},"signal":15})");
  ASSERT_TRUE(bynumber.ok());
  EXPECT_EQ(bynumber->signal, SIGTERM);
  EXPECT_FALSE(ParseSendSignalRequest(R"({"process":{"pid":5},"signal":"SIGHUP"})").ok());
}

TEST(ProcessMessagesTest, SnakeCaseNamesAreAccepted) {
  auto w = ParseWatchRequest(R"({"path":"/x","include_entry":true,"allow_network_mounts":true})");
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->include_entry);
  EXPECT_TRUE(w->allow_network_mounts);
  auto id = ParseWatcherIdRequest(R"({"watcher_id":"w1"})");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->watcher_id, "w1");
}

TEST(ProcessMessagesTest, BadInputNamesTheProblem) {
  EXPECT_EQ(ParseStartRequest("{not json").status().message(), "invalid JSON in request body");
  EXPECT_EQ(ParseStartRequest("[1]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ParseStartRequest(R"({"process":{"cmd":5}})").status().message().find("'cmd'"),
            std::string::npos);
  EXPECT_NE(ParseStartRequest(R"({"process":{}})").status().message().find("process.cmd"),
            std::string::npos);
  EXPECT_NE(ParseConnectRequest(R"({"process":{"pid":-1}})").status().message().find("pid"),
            std::string::npos);
  EXPECT_NE(ParseConnectRequest(R"({"process":{"pid":99999999999}})")
                .status()
                .message()
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(ParseConnectRequest(R"({})").status().message().find("process"), std::string::npos);
  EXPECT_TRUE(ParseListRequest("").ok());
  EXPECT_FALSE(ParseListRequest("\"x\"").ok());
}

TEST(ProcessMessagesTest, EventsHaveTheEventWrapperAndOmitDefaults) {
  EXPECT_EQ(StartEventJson(321), R"({"event":{"start":{"pid":321}}})");
  EXPECT_EQ(DataEventJson(OutputKind::kStdout, "hi\n"), R"({"event":{"data":{"stdout":"aGkK"}}})");
  EXPECT_EQ(KeepaliveEventJson(), R"({"event":{"keepalive":{}}})");
  ProcessExit ok = ProcessExitFromWaitStatus(0);
  EXPECT_EQ(EndEventJson(ok), R"({"event":{"end":{"exited":true,"status":"exit status 0"}}})");
  ProcessExit fail = ProcessExitFromWaitStatus(1 << 8);
  EXPECT_EQ(
      json::parse(EndEventJson(fail)),
      json::parse(
          R"({"event":{"end":{"exitCode":1,"exited":true,"status":"exit status 1","error":"exit status 1"}}})"));
  ProcessExit killed = ProcessExitFromWaitStatus(SIGKILL);
  EXPECT_EQ(killed.exit_code, -1);
  EXPECT_FALSE(killed.exited);
  EXPECT_EQ(killed.status, "signal: killed");
  EXPECT_EQ(killed.error, "signal: killed");
  EXPECT_EQ(ProcessExitFromWaitStatus(SIGTERM).status, "signal: terminated");
}

TEST(FilesystemMessagesTest, EntryInfoFollowsProto3Json) {
  EntryInfo e;
  e.name = "a.txt";
  e.type = FileType::kFile;
  e.path = "/home/user/a.txt";
  e.size = 4;
  e.mode = 0644;
  e.permissions = "-rw-r--r--";
  e.owner = "user";
  e.group = "user";
  e.modified_time =
      base::WallTime(std::chrono::seconds(1767225600)) +
      std::chrono::duration_cast<base::WallTime::duration>(std::chrono::nanoseconds(123456789));
  auto j = json::parse(EntryResponseJson(e));
  EXPECT_EQ(j, json::parse(R"({"entry":{"name":"a.txt","type":"FILE_TYPE_FILE",
      "path":"/home/user/a.txt","size":"4","mode":420,"permissions":"-rw-r--r--","owner":"user",
      "group":"user","modifiedTime":"2026-01-01T00:00:00.123456789Z"}})"));
  e.metadata["k"] = "v";
  e.symlink_target = "/t";
  j = json::parse(EntryResponseJson(e));
  EXPECT_EQ(j["entry"]["metadata"]["k"], "v");
  EXPECT_EQ(j["entry"]["symlinkTarget"], "/t");
}

TEST(FilesystemMessagesTest, WatchMessagesHaveNoEventWrapper) {
  EXPECT_EQ(WatchStartJson(), R"({"start":{}})");
  EXPECT_EQ(WatchKeepaliveJson(), R"({"keepalive":{}})");
  FilesystemEvent ev{"nested/a.txt", EventType::kWrite, std::nullopt};
  EXPECT_EQ(WatchEventJson(ev),
            R"({"filesystem":{"name":"nested/a.txt","type":"EVENT_TYPE_WRITE"}})");
  EXPECT_EQ(ListDirResponseJson({}), "{}");
  EXPECT_EQ(CreateWatcherResponseJson("w1"), R"({"watcherId":"w1"})");
}

}  // namespace
}  // namespace warren::envd
