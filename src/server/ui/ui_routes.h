#pragma once

#include "net/router.h"

namespace warren::server::ui {

// The route patterns of the dashboard. They need no key (auth::RouteGuardOptions lists exactly
// these): the page holds no data, and every call it makes for data sends the key the user typed.
inline constexpr const char* kUiPattern = "/ui";
inline constexpr const char* kUiFilesPattern = "/ui/{file...}";

// Serves the embedded dashboard: GET /ui redirects to /ui/, GET /ui/ is index.html, GET
// /ui/<file> one of the embedded files (404 for anything else, including paths with '/'). Every
// answer carries the page's security headers (a Content-Security-Policy of 'self' only, no
// sniffing, no referrer, no framing); files carry a strong ETag and answer If-None-Match with
// 304. Handlers run inline on the loop thread: they only copy static bytes.
void AddUiRoutes(net::Router& router);

}  // namespace warren::server::ui
