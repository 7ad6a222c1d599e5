#include "server/ui/ui_routes.h"

#include <algorithm>

#include "base/strings.h"
#include "server/ui/web_assets.h"

namespace warren::server::ui {
namespace {

// The page runs only its own script and style and talks only to this server; nothing inline,
// no plug-ins, no framing by another site (clickjacking the kill button), no <base> rewrites.
constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
    "object-src 'none'";

void SetSecurityHeaders(net::Headers& h) {
  h.Set("Content-Security-Policy", kContentSecurityPolicy);
  h.Set("X-Content-Type-Options", "nosniff");
  h.Set("Referrer-Policy", "no-referrer");
  h.Set("X-Frame-Options", "DENY");
}

net::Response NotFound() {
  net::Response resp = net::Response::Text(404, "not found\n");
  SetSecurityHeaders(resp.headers);
  return resp;
}

// Whether an If-None-Match list names `etag` (or is "*"). Weak comparison, as RFC 9110 §13.1.2
// asks for If-None-Match.
bool NoneMatchHits(std::string_view header, std::string_view etag) {
  for (std::string_view candidate : base::Split(header, ',')) {
    candidate = base::TrimSpace(candidate);
    if (candidate.starts_with("W/")) candidate.remove_prefix(2);
    if (candidate == "*" || candidate == etag) return true;
  }
  return false;
}

void ServeFile(net::Request&& req, net::Responder r) {
  std::string_view name = req.PathParam("file");
  if (name.empty()) name = "index.html";
  const WebAsset* asset = FindWebAsset(name);
  if (asset == nullptr) return r.Send(NotFound());
  net::Response resp;
  if (auto inm = req.headers.Get("If-None-Match"); inm && NoneMatchHits(*inm, asset->etag)) {
    resp.status = 304;
  } else {
    resp.status = 200;
    resp.body = std::string(asset->body);
    resp.headers.Set("Content-Type", asset->content_type);
  }
  resp.headers.Set("ETag", asset->etag);
  // Revalidated on every load: a new binary's page is never mixed with an old cached script.
  resp.headers.Set("Cache-Control", "no-cache");
  SetSecurityHeaders(resp.headers);
  r.Send(std::move(resp));
}

}  // namespace

const WebAsset* FindWebAsset(std::string_view name) {
  std::span<const WebAsset> assets = WebAssets();
  auto it = std::find_if(assets.begin(), assets.end(),
                         [name](const WebAsset& a) { return a.name == name; });
  return it == assets.end() ? nullptr : &*it;
}

void AddUiRoutes(net::Router& router) {
  router.Add("GET", kUiPattern, [](net::Request&&, net::Responder r) {
    // Relative URLs in the page (app.js, style.css) resolve under /ui/ only with the slash.
    net::Response resp = net::Response::Empty(308);
    resp.headers.Set("Location", "/ui/");
    SetSecurityHeaders(resp.headers);
    r.Send(std::move(resp));
  });
  router.Add("GET", kUiFilesPattern, ServeFile);
}

}  // namespace warren::server::ui
