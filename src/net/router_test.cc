#include "net/router.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

namespace warren::net {
namespace {

Handler Named(std::string name, std::string* called) {
  return [name, called](Request&&, Responder) { *called = name; };
}

// Calls the matched handler with a Responder that is never used; only routing is under test.
std::string Route(const Router& router, std::string_view method, std::string_view path,
                  Router::Match* out = nullptr) {
  Router::Match m = router.Find(method, path);
  if (out) *out = m;
  if (!m.handler) return std::to_string(m.error_status);
  return m.params.empty() ? "matched" : m.params.begin()->second;
}

TEST(RouterTest, LiteralsCapturesAndRest) {
  Router r;
  std::string called;
  r.Add("GET", "/apis/{group}/{version}/namespaces/{ns}/{plural}/{name}", Named("obj", &called));
  r.Add("GET", "/files/{path...}", Named("files", &called));
  r.Add("GET", "/", Named("root", &called));

  Router::Match m = r.Find("GET", "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes/a");
  ASSERT_NE(m.handler, nullptr);
  EXPECT_EQ(m.params.at("group"), "agents.kruise.io");
  EXPECT_EQ(m.params.at("version"), "v1alpha1");
  EXPECT_EQ(m.params.at("ns"), "default");
  EXPECT_EQ(m.params.at("plural"), "sandboxes");
  EXPECT_EQ(m.params.at("name"), "a");

  m = r.Find("GET", "/files/a/b%20c/d.txt");
  ASSERT_NE(m.handler, nullptr);
  EXPECT_EQ(m.params.at("path"), "a/b c/d.txt");
  EXPECT_EQ(Route(r, "GET", "/"), "matched");
  EXPECT_EQ(Route(r, "GET", "/files"), "404");
}

TEST(RouterTest, LiteralBeatsCaptureAndBacktracks) {
  Router r;
  std::string called;
  r.Add("GET", "/v2/sandboxes/{id}", Named("by-id", &called));
  r.Add("GET", "/v2/sandboxes/metrics", Named("metrics", &called));
  r.Add("GET", "/a/b/c", Named("abc", &called));
  r.Add("GET", "/a/{x}/d", Named("axd", &called));

  Router::Match m = r.Find("GET", "/v2/sandboxes/metrics");
  ASSERT_NE(m.handler, nullptr);
  (*m.handler)(Request{}, Responder(nullptr));
  EXPECT_EQ(called, "metrics");
  m = r.Find("GET", "/v2/sandboxes/i123");
  (*m.handler)(Request{}, Responder(nullptr));
  EXPECT_EQ(called, "by-id");
  EXPECT_EQ(m.params.at("id"), "i123");
  // "b" is a literal under /a, but only /a/{x}/d continues with "d".
  m = r.Find("GET", "/a/b/d");
  ASSERT_NE(m.handler, nullptr);
  (*m.handler)(Request{}, Responder(nullptr));
  EXPECT_EQ(called, "axd");
  EXPECT_EQ(m.params.at("x"), "b");
}

TEST(RouterTest, EncodedSlashStaysInsideItsSegment) {
  Router r;
  std::string called;
  r.Add("GET", "/objects/{name}", Named("obj", &called));
  Router::Match m = r.Find("GET", "/objects/a%2Fb");
  ASSERT_NE(m.handler, nullptr);
  EXPECT_EQ(m.params.at("name"), "a/b");
}

TEST(RouterTest, NotFoundVersusMethodNotAllowed) {
  Router r;
  std::string called;
  r.Add("GET", "/v2/sandboxes", Named("list", &called));
  r.Add("POST", "/v2/sandboxes", Named("create", &called));
  Router::Match m;
  EXPECT_EQ(Route(r, "DELETE", "/v2/sandboxes", &m), "405");
  EXPECT_EQ(m.allow, "GET, HEAD, POST");
  EXPECT_EQ(Route(r, "GET", "/v2/nothing"), "404");
  // HEAD is answered by the GET handler.
  EXPECT_EQ(Route(r, "HEAD", "/v2/sandboxes"), "matched");
}

TEST(RouterTest, CaptureNamesMayDifferPerMethod) {
  Router r;
  std::string called;
  r.Add("GET", "/x/{id}", Named("get", &called));
  r.Add("PUT", "/x/{name}", Named("put", &called));
  EXPECT_EQ(r.Find("GET", "/x/1").params.at("id"), "1");
  EXPECT_EQ(r.Find("PUT", "/x/2").params.at("name"), "2");
}

TEST(RouterTest, FallbackAnswersEverythingUnmatched) {
  Router r;
  std::string called;
  r.Add("GET", "/health", Named("health", &called));
  r.SetFallback(Named("fallback", &called), RouteOptions{.blocking = true});
  Router::Match m = r.Find("POST", "/health");
  ASSERT_NE(m.handler, nullptr);
  EXPECT_TRUE(m.options->blocking);
  m = r.Find("GET", "/anything/else");
  ASSERT_NE(m.handler, nullptr);
  (*m.handler)(Request{}, Responder(nullptr));
  EXPECT_EQ(called, "fallback");
}

TEST(RouterTest, RouteOptionsComeBackWithTheMatch) {
  Router r;
  std::string called;
  r.Add("POST", "/files", Named("upload", &called),
        RouteOptions{.blocking = true, .stream_body = true, .max_body_bytes = 123});
  Router::Match m = r.Find("POST", "/files");
  ASSERT_NE(m.options, nullptr);
  EXPECT_TRUE(m.options->stream_body);
  EXPECT_EQ(m.options->max_body_bytes, 123u);
}

TEST(RouterTest, WrapAllReachesEveryRouteWithItsPattern) {
  Router r;
  std::string called;
  r.Add("GET", "/a/{x}", Named("a", &called), {.blocking = true});
  r.Add("PUT", "/a/{x}", Named("a-put", &called));
  r.Add("GET", "/files/{path...}", Named("files", &called));
  r.Add("GET", "/health", Named("health", &called));
  r.SetFallback(Named("fallback", &called));
  std::vector<std::string> seen;
  r.WrapAll([&](std::string_view method, std::string_view pattern, RouteOptions& options,
                Handler inner) -> Handler {
    seen.push_back(fmt::format("{} {} {}", method, pattern, options.blocking));
    if (options.blocking) options.max_body_bytes = 7;
    if (pattern == "/health") return inner;
    return [inner = std::move(inner), &called](Request&& req, Responder r) {
      inner(std::move(req), std::move(r));
      called = "wrapped " + called;
    };
  });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen,
            (std::vector<std::string>{"  false", "GET /a/{x} true", "GET /files/{path...} false",
                                      "GET /health false", "PUT /a/{x} false"}));
  for (auto [method, path, want] :
       {std::tuple{"GET", "/a/1", "wrapped a"}, std::tuple{"PUT", "/a/1", "wrapped a-put"},
        std::tuple{"GET", "/files/x/y", "wrapped files"}, std::tuple{"GET", "/health", "health"},
        std::tuple{"GET", "/nowhere", "wrapped fallback"}}) {
    Router::Match m = r.Find(method, path);
    ASSERT_NE(m.handler, nullptr) << path;
    (*m.handler)(Request{}, Responder(nullptr));
    EXPECT_EQ(called, want) << path;
  }
  EXPECT_EQ(r.Find("GET", "/a/1").options->max_body_bytes, 7u) << "options can be adjusted";
  EXPECT_EQ(r.Find("PUT", "/a/1").options->max_body_bytes, 0u);
}

TEST(RouterTest, DefaultFairnessKeyIsTheApiKeyElseAuthorizationElseTheClientAddress) {
  Request a;
  a.remote = "127.0.0.2:40001";
  EXPECT_EQ(DefaultFairnessKey(a), "address 127.0.0.2");
  Request b = a;
  b.remote = "127.0.0.2:40002";  // another connection of the same client
  EXPECT_EQ(DefaultFairnessKey(a), DefaultFairnessKey(b));
  Request v6;
  v6.remote = "[::1]:40003";
  EXPECT_EQ(DefaultFairnessKey(v6), "address [::1]");
  a.headers.Set("Authorization", "Bearer t1");
  EXPECT_EQ(DefaultFairnessKey(a), "key Bearer t1");
  a.headers.Set("X-API-Key", "e2b_k1");
  EXPECT_EQ(DefaultFairnessKey(a), "key e2b_k1");
}

}  // namespace
}  // namespace warren::net
