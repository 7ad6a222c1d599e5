#include "server/e2b/requests.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/time_format.h"

namespace warren::server::e2b {
namespace {

using ::testing::HasSubstr;

const TimeoutRules kRules{.default_seconds = 300, .max_seconds = 3600};

Status CreateError(std::string_view body) { return ParseCreateRequest(body, kRules).status(); }

TEST(CreateRequestTest, TheBodyJs2_51SendsParses) {
  auto r = ParseCreateRequest(
      R"({"templateID":"base","metadata":{"my key":"a&b=c","other":"x"},"envVars":{"FOO":"bar"},
          "timeout":120,"autoPause":true,"autoResume":{"enabled":true},"unknownField":[1]})",
      kRules);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->template_id, "base");
  EXPECT_EQ(r->timeout_seconds, 120);
  EXPECT_EQ(r->metadata.at("my key"), "a&b=c");
  EXPECT_EQ(r->env_vars.at("FOO"), "bar");
  EXPECT_TRUE(r->auto_pause);
  EXPECT_TRUE(r->auto_resume);
  EXPECT_TRUE(r->secure);
}

TEST(CreateRequestTest, PythonsV1DefaultsParse) {
  auto r = ParseCreateRequest(
      R"({"templateID":"base","timeout":300,"secure":true,"allow_internet_access":true,
          "metadata":{},"envVars":{}})",
      kRules);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->timeout_seconds, 300);
  EXPECT_EQ(r->allow_internet_access, true);
  auto dflt = ParseCreateRequest(R"({"templateID":"base"})", kRules);
  ASSERT_TRUE(dflt.ok());
  EXPECT_EQ(dflt->timeout_seconds, 300);
  EXPECT_FALSE(dflt->auto_pause);
}

TEST(CreateRequestTest, NetworkFieldsBecomeOneEgressPolicyAndATrafficChoice) {
  auto none = ParseCreateRequest(R"({"templateID":"base","allow_internet_access":true})", kRules);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->network) << "nothing asked: the node's default, and a pool may serve it";
  EXPECT_TRUE(none->public_traffic);

  auto closed =
      ParseCreateRequest(R"({"templateID":"base","allow_internet_access":false})", kRules);
  ASSERT_TRUE(closed.ok());
  ASSERT_TRUE(closed->network);
  EXPECT_FALSE(closed->network->allow_internet);

  auto lists = ParseCreateRequest(
      R"({"templateID":"base","network":{"allowOut":["1.1.1.1"],"denyOut":["0.0.0.0/0"],
          "allowPublicTraffic":false}})",
      kRules);
  ASSERT_TRUE(lists.ok()) << lists.status();
  ASSERT_TRUE(lists->network);
  EXPECT_EQ(lists->network->allow_out.size(), 1u);
  EXPECT_EQ(lists->network->deny_out.size(), 1u);
  EXPECT_FALSE(lists->public_traffic);

  auto masked = ParseCreateRequest(
      R"({"templateID":"base","network":{"maskRequestHost":"localhost:${PORT}"}})", kRules);
  ASSERT_TRUE(masked.ok()) << masked.status();
  EXPECT_EQ(masked->mask_request_host, "localhost:${PORT}");
  EXPECT_FALSE(masked->network) << "no egress rule in it";

  for (const char* bad : {R"({"templateID":"b","network":[]})",
                          R"({"templateID":"b","network":{"allowOut":"1.1.1.1"}})",
                          R"({"templateID":"b","network":{"denyOut":["example.com"]}})",
                          R"({"templateID":"b","network":{"allowOut":["not a name"]}})",
                          R"({"templateID":"b","network":{"maskRequestHost":"a b"}})",
                          R"({"templateID":"b","network":{"maskRequestHost":5}})",
                          R"({"templateID":"b","network":{"egressProxy":{"address":"x"}}})"}) {
    auto r = ParseCreateRequest(bad, kRules);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("network"), std::string::npos) << r.status();
  }
}

TEST(NetworkUpdateTest, TheWholePolicyIsReplacedAndBadEntriesAreRefused) {
  auto empty = ParseNetworkUpdate("{}");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->IsDefault()) << "an update naming nothing opens everything again";
  auto both = ParseNetworkUpdate(R"({"allowOut":["1.1.1.1"],"denyOut":["0.0.0.0/0"]})");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->allow_out.size(), 1u);
  auto camel = ParseNetworkUpdate(R"({"allowInternetAccess":false})");
  ASSERT_TRUE(camel.ok());
  EXPECT_FALSE(camel->allow_internet);
  EXPECT_FALSE(ParseNetworkUpdate(R"({"denyOut":["10.0.0.0/99"]})").ok());
  EXPECT_FALSE(ParseNetworkUpdate(R"({"rules":{}})").ok());
  EXPECT_FALSE(ParseNetworkUpdate("[]").ok());
}

TEST(CreateRequestTest, BadBodiesAreInvalidArgumentNamingTheField) {
  struct Case {
    const char* body;
    const char* needle;
  } cases[] = {
      {"", "empty"},
      {"{", "invalid JSON"},
      {"[]", "JSON object"},
      {"{}", "templateID is required"},
      {R"({"templateID":7})", "templateID must be a string"},
      {R"({"templateID":""})", "templateID must not be empty"},
      {R"({"templateID":"base","timeout":0})", "timeout must be > 0"},
      {R"({"templateID":"base","timeout":-5})", "timeout must be > 0"},
      {R"({"templateID":"base","timeout":3601})", "above the maximum of 3600"},
      {R"({"templateID":"base","timeout":"60"})", "timeout must be an integer"},
      {R"({"templateID":"base","timeout":1.5})", "timeout must be an integer"},
      {R"({"templateID":"base","timeout":1e300})", "timeout must be an integer"},
      {R"({"templateID":"base","timeout":18446744073709551615})", "out of range"},
      {R"({"templateID":"base","metadata":[]})", "metadata must be an object"},
      {R"({"templateID":"base","metadata":{"a":1}})", "metadata[\"a\"] must be a string"},
      {R"({"templateID":"base","envVars":{"A=B":"x"}})", "envVars key \"A=B\""},
      {R"({"templateID":"base","autoPause":"yes"})", "autoPause must be a boolean"},
      {R"({"templateID":"base","autoResume":true})", "autoResume must be an object"},
      {R"({"templateID":"base","volumeMounts":{}})", "volumeMounts must be an array"},
      {R"({"templateID":"base","volumeMounts":[{"path":"/v"}]})",
       "volumeMounts[0].name is required"},
      {R"({"templateID":"base","volumeMounts":[{"name":"v"}]})",
       "volumeMounts[0].path is required"},
      {R"({"templateID":"base","volumeMounts":[{"name":"V_1","path":"/v"}]})",
       "volumeMounts[0].name \"V_1\" is not a volume name"},
      {R"({"templateID":"base","volumeMounts":[{"name":"v","path":"v"}]})",
       "must be an absolute path"},
      {R"({"templateID":"base","volumeMounts":[{"name":"v","path":"/a/../etc"}]})",
       "must be an absolute path"},
      {R"({"templateID":"base","volumeMounts":[{"name":"v","path":"/"}]})",
       "must be an absolute path"},
      {R"({"templateID":"base","volumeMounts":[{"name":"v","path":"/proc/x"}]})", "is reserved"},
      {R"({"templateID":"base","volumeMounts":[{"name":"v","path":"/a"},{"name":"w","path":"/a"}]})",
       "volumeMounts[1].path \"/a\" is mounted twice"},
      {R"({"templateID":"base","metadata":{"agents.kruise.io/owner":"me"}})", "reserved prefix"},
      {R"({"templateID":"base","metadata":{"e2b.agents.kruise.io/bogus":"1"}})",
       "not a supported extension"},
      {R"({"templateID":"base","metadata":{"e2b.agents.kruise.io/never-timeout":"maybe"}})",
       "\"true\" or \"false\""},
  };
  for (const auto& c : cases) {
    Status s = CreateError(c.body);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_NE(s.message().find(c.needle), std::string::npos) << c.body << " → " << s.message();
  }
}

TEST(CreateRequestTest, VolumeMountsParse) {
  auto r = ParseCreateRequest(
      R"({"templateID":"base","volumeMounts":[{"name":"work","path":"/mnt/work"},{"name":"b","path":"/b"}]})",
      kRules);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->volume_mounts.size(), 2u);
  EXPECT_EQ(r->volume_mounts[0].name, "work");
  EXPECT_EQ(r->volume_mounts[0].path, "/mnt/work");
  EXPECT_EQ(r->volume_mounts[1].path, "/b");
}

TEST(CreateRequestTest, OversizedMetadataIsRefused) {
  std::string big(70 * 1024, 'x');
  Status s = CreateError(R"({"templateID":"base","metadata":{"k":")" + big + R"("}})");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("at most"), std::string::npos) << s;
}

TEST(CreateRequestTest, ExtensionsAreTakenOutOfMetadata) {
  auto r = ParseCreateRequest(
      R"({"templateID":"base","metadata":{"e2b.agents.kruise.io/never-timeout":"true",
          "e2b.agents.kruise.io/wait-ready-timeout-seconds":"90","keep":"me"}})",
      kRules);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->never_timeout);
  EXPECT_EQ(r->wait_ready_timeout, std::chrono::seconds(90));
  EXPECT_EQ(r->metadata.size(), 1u);
  EXPECT_EQ(r->metadata.at("keep"), "me");
}

TEST(CreateRequestTest, ImageAndCpuExtensionsAskForAnInplaceUpdate) {
  auto r = ParseCreateRequest(
      R"({"templateID":"pool","metadata":{"e2b.agents.kruise.io/image":"busybox:1",
          "e2b.agents.kruise.io/cpu-request":"500m","e2b.agents.kruise.io/cpu-limit":"2"}})",
      kRules);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->inplace_update.has_value());
  EXPECT_EQ(r->inplace_update->image, "busybox:1");
  EXPECT_EQ(r->inplace_update->resources.requests.at("cpu").MilliValue(), 500);
  EXPECT_EQ(r->inplace_update->resources.limits.at("cpu").MilliValue(), 2000);
  EXPECT_TRUE(r->metadata.empty());
  auto plain = ParseCreateRequest(R"({"templateID":"pool"})", kRules);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->inplace_update.has_value());
  for (const char* bad :
       {R"("e2b.agents.kruise.io/cpu-limit":"lots")", R"("e2b.agents.kruise.io/cpu-request":"0")",
        R"("e2b.agents.kruise.io/image":"")", R"("e2b.agents.kruise.io/image":"two words")"}) {
    Status s = CreateError(fmt::format(R"({{"templateID":"pool","metadata":{{{}}}}})", bad));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("e2b.agents.kruise.io/"), std::string::npos) << s;
  }
}

TEST(CreateRequestTest, WaitsAboveTheMaximumAreRefusedNamingIt) {
  for (const char* ext : {"wait-ready-timeout-seconds", "claim-timeout-seconds"}) {
    std::string body = fmt::format(
        R"({{"templateID":"base","metadata":{{"e2b.agents.kruise.io/{}":"86400"}}}})", ext);
    Status s = CreateError(body);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << ext;
    EXPECT_NE(s.message().find(ext), std::string::npos) << s;
    EXPECT_NE(s.message().find("maximum of 600 s"), std::string::npos) << s;
  }
  auto r = ParseCreateRequest(
      R"({"templateID":"base","metadata":{"e2b.agents.kruise.io/claim-timeout-seconds":"600"}})",
      kRules);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->claim_timeout, std::chrono::seconds(600));
}

TEST(ConnectAndTimeoutTest, BodiesParse) {
  EXPECT_EQ(ParseConnectRequest("", kRules)->timeout_seconds, 300);
  EXPECT_EQ(ParseConnectRequest("{}", kRules)->timeout_seconds, 300);
  EXPECT_EQ(ParseConnectRequest(R"({"timeout":60})", kRules)->timeout_seconds, 60);
  EXPECT_EQ(ParseConnectRequest(R"({"timeout":0})", kRules).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseTimeoutRequest(R"({"timeout":5})", kRules), 5);
  EXPECT_EQ(*ParseTimeoutRequest(R"({"timeout":0})", kRules), 0);
  EXPECT_EQ(ParseTimeoutRequest(R"({"timeout":-1})", kRules).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTimeoutRequest("{}", kRules).status().message(), "timeout is required");
  EXPECT_EQ(ParseTimeoutRequest("nope", kRules).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseRefreshRequest("", kRules), 60);
}

TEST(ListQueryTest, TheTripleEncodedMetadataFilterDecodes) {
  // As captured from e2b@2.51.0: metadata=my%252520key%3Da%252526b%25253Dc, which the HTTP
  // layer has already decoded once.
  auto m = DecodeMetadataFilter("my%2520key=a%2526b%253Dc");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 1u);
  EXPECT_EQ(m->at("my key"), "a&b=c");
  auto two = DecodeMetadataFilter("a%3D1%26b%3D2");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->at("a"), "1");
  EXPECT_EQ(two->at("b"), "2");
  EXPECT_FALSE(DecodeMetadataFilter("a%3D1%3D2").ok());
  EXPECT_FALSE(DecodeMetadataFilter("%zz").ok());
  EXPECT_FALSE(DecodeMetadataFilter("novalue").ok());
}

TEST(ListQueryTest, ParametersParseAndBadOnesAreNamed) {
  auto q = ParseListQuery({{"state", "paused"},
                           {"limit", "5"},
                           {"order", "asc"},
                           {"startedAfter", "2026-01-01T00:00:00Z"},
                           {"template", "base"},
                           {"nextToken", "abc"}});
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_FALSE(q->want_running);
  EXPECT_TRUE(q->want_paused);
  EXPECT_EQ(q->limit, 5);
  EXPECT_EQ(q->order, SortOrder::kAsc);
  EXPECT_EQ(q->template_id, "base");
  EXPECT_EQ(q->next_token, "abc");
  EXPECT_EQ(*q->started_after, *base::ParseRfc3339("2026-01-01T00:00:00Z"));

  auto both = ParseListQuery({{"state", "running,paused"}});
  EXPECT_TRUE(both->want_running && both->want_paused);
  for (auto bad : std::vector<std::pair<std::string, std::string>>{{"state", "dead"},
                                                                   {"limit", "0"},
                                                                   {"limit", "101"},
                                                                   {"limit", "x"},
                                                                   {"order", "up"},
                                                                   {"startedAfter", "yesterday"},
                                                                   {"state", ","}}) {
    auto r = ParseListQuery({bad});
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad.first << "=" << bad.second;
    EXPECT_NE(r.status().message().find(bad.first), std::string::npos) << r.status();
  }
}

TEST(StateRequestsTest, PauseSnapshotAndForkBodiesParseAndBadOnesAreNamed) {
  EXPECT_TRUE(*ParsePauseMemory(""));
  EXPECT_TRUE(*ParsePauseMemory("{}"));
  EXPECT_FALSE(*ParsePauseMemory(R"({"memory":false})"));
  EXPECT_THAT(ParsePauseMemory(R"({"memory":"no"})").status().message(), HasSubstr("memory"));

  EXPECT_EQ(*ParseSnapshotName("{}"), "");
  EXPECT_EQ(*ParseSnapshotName(R"({"name":"before deploy"})"), "before deploy");
  EXPECT_THAT(ParseSnapshotName(R"({"name":7})").status().message(), HasSubstr("name"));
  EXPECT_FALSE(ParseSnapshotName("{\"name\":\"a\\u0001b\"}").ok()) << "a control character";
  EXPECT_FALSE(ParseSnapshotName(R"({"name":")" + std::string(300, 'x') + R"("})").ok());

  TimeoutRules rules;
  auto fork = ParseForkRequest("", rules, 10);
  ASSERT_TRUE(fork.ok());
  EXPECT_EQ(fork->count, 1);
  EXPECT_EQ(fork->timeout_seconds, 15);  // E2B's default for a fork
  fork = ParseForkRequest(R"({"count":3,"timeout":600})", rules, 10);
  EXPECT_EQ(fork->count, 3);
  EXPECT_EQ(fork->timeout_seconds, 600);
  for (const char* bad :
       {R"({"count":0})", R"({"count":11})", R"({"count":-1})", R"({"count":"3"})"}) {
    auto r = ParseForkRequest(bad, rules, 10);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("count")) << bad;
  }
  EXPECT_FALSE(ParseForkRequest(R"({"timeout":-5})", rules, 10).ok());

  auto q = ParseSnapshotQuery(
      {{"sandboxID", "iabc"}, {"name", "n"}, {"limit", "5"}, {"nextToken", "snap-1"}});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->sandbox_id, "iabc");
  EXPECT_EQ(q->limit, 5);
  EXPECT_EQ(q->next_token, "snap-1");
  EXPECT_THAT(ParseSnapshotQuery({{"limit", "0"}}).status().message(), HasSubstr("limit"));
}

TEST(MetricsQueryTest, StartAndEndAreUnixSeconds) {
  auto q = ParseMetricsQuery({{"start", "100"}, {"end", "200"}});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q->start, base::WallTime(std::chrono::seconds(100)));
  EXPECT_FALSE(ParseMetricsQuery({{"start", "x"}}).ok());
  EXPECT_FALSE(ParseMetricsQuery({{"start", "300"}, {"end", "200"}}).ok());
  EXPECT_TRUE(ParseMetricsQuery({}).ok());
}

}  // namespace
}  // namespace warren::server::e2b
