// The dashboard as `warren server` serves it: the embedded page without a key, with the headers
// that keep a browser from running anything but its own script, and nothing else without a key.

#include <gtest/gtest.h>

#include "net/http_client.h"
#include "process.h"

namespace warren::testing {
namespace {

// A client that sends no key at all: what a browser opening the page sends.
std::unique_ptr<net::HttpClient> Anonymous(ServerProcess& s) {
  auto client = net::HttpClient::ForAddress(s.address());
  EXPECT_TRUE(client.ok()) << client.status();
  return std::move(*client);
}

net::Response Get(net::HttpClient& client, const std::string& target,
                  const std::string& if_none_match = "") {
  net::ClientRequest req;
  req.method = "GET";
  req.target = target;
  if (!if_none_match.empty()) req.headers.Set("If-None-Match", if_none_match);
  auto resp = client.Do(req);
  EXPECT_TRUE(resp.ok()) << target << ": " << resp.status();
  return resp.ok() ? std::move(*resp) : net::Response{};
}

void ExpectSecurityHeaders(const net::Response& r, const std::string& what) {
  std::string csp(r.headers.Get("Content-Security-Policy").value_or(""));
  EXPECT_TRUE(csp.starts_with("default-src 'self'")) << what << ": " << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << what;
  EXPECT_EQ(r.headers.Get("X-Content-Type-Options").value_or(""), "nosniff") << what;
  EXPECT_EQ(r.headers.Get("Referrer-Policy").value_or(""), "no-referrer") << what;
  EXPECT_EQ(r.headers.Get("X-Frame-Options").value_or(""), "DENY") << what;
}

TEST(ServerUi, ThePageIsServedWithoutAKeyWithStrictHeaders) {
  ServerProcess s;
  auto anon = Anonymous(s);

  net::Response redirect = Get(*anon, "/ui");
  EXPECT_EQ(redirect.status, 308);
  EXPECT_EQ(redirect.headers.Get("Location").value_or(""), "/ui/");

  net::Response page = Get(*anon, "/ui/");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.headers.Get("Content-Type").value_or(""), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<script type=\"module\" src=\"app.js\"></script>"), std::string::npos);
  // No inline script for the policy to have to allow.
  EXPECT_EQ(page.body.find("<script>"), std::string::npos);
  ExpectSecurityHeaders(page, "/ui/");

  net::Response script = Get(*anon, "/ui/app.js");
  ASSERT_EQ(script.status, 200);
  EXPECT_EQ(script.headers.Get("Content-Type").value_or(""), "text/javascript; charset=utf-8");
  ExpectSecurityHeaders(script, "/ui/app.js");
  net::Response style = Get(*anon, "/ui/style.css");
  ASSERT_EQ(style.status, 200);
  EXPECT_EQ(style.headers.Get("Content-Type").value_or(""), "text/css; charset=utf-8");

  // A strong ETag: the same bytes revalidate to 304 with no body.
  std::string etag(script.headers.Get("ETag").value_or(""));
  ASSERT_GT(etag.size(), 2u);
  EXPECT_EQ(etag.front(), '"');
  net::Response again = Get(*anon, "/ui/app.js", etag);
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  EXPECT_EQ(Get(*anon, "/ui/app.js", "\"something-else\"").status, 200);
}

TEST(ServerUi, UnknownAndEscapingPathsAre404) {
  ServerProcess s;
  auto anon = Anonymous(s);
  for (const char* target :
       {"/ui/nope.html", "/ui/../etc/passwd", "/ui/%2e%2e/etc/passwd", "/ui/..%2fetc%2fpasswd",
        "/ui/./app.js", "/ui/web/app.js", "/ui/app.js/", "/ui//app.js", "/ui/.gitkeep"}) {
    net::Response r = Get(*anon, target);
    // The server may refuse a dot-segment target itself (400); it never serves a file for it.
    EXPECT_TRUE(r.status == 404 || r.status == 400) << target << " → " << r.status;
    EXPECT_EQ(r.body.find("root:"), std::string::npos) << target;
  }
}

TEST(ServerUi, EverythingButThePageStillWantsAKey) {
  ServerProcess s;
  auto anon = Anonymous(s);
  EXPECT_EQ(Get(*anon, "/ui/").status, 200);
  for (const char* target :
       {"/whoami", "/apis/agents.kruise.io/v1alpha1/sandboxes", "/sandboxes", "/metrics",
        "/apis/agents.kruise.io/v1alpha1/sandboxsets?watch=true"}) {
    net::Response r = Get(*anon, target);
    EXPECT_EQ(r.status, 401) << target;
    EXPECT_EQ(r.headers.Get("WWW-Authenticate").value_or(""), "Bearer realm=\"warren\"") << target;
  }
  // Names that only look like the page's are no route at all.
  for (const char* target : {"/uix", "/ui.js", "/uiapp.js"}) {
    EXPECT_EQ(Get(*anon, target).status, 404) << target;
  }
  // The same routes answer the admin key (the page's calls work once a key is typed).
  net::ClientRequest req;
  req.method = "GET";
  req.target = "/whoami";
  auto who = s.http().Do(req);
  ASSERT_TRUE(who.ok()) << who.status();
  EXPECT_EQ(who->status, 200);
}

}  // namespace
}  // namespace warren::testing
