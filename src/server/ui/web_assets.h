#pragma once

#include <span>
#include <string_view>

namespace warren::server::ui {

// One static file of the dashboard (web/ at the repository root), compiled into the binary by
// cmake/EmbedWeb.cmake. All views point into static storage that lives as long as the process.
struct WebAsset {
  std::string_view name;          // file name under web/: "index.html"
  std::string_view content_type;  // "text/html; charset=utf-8"
  std::string_view etag;          // strong validator, quoted: "\"<sha-256 prefix>\""
  std::string_view body;
};

// Every embedded file, sorted by name. Defined in the generated web_assets_data.cc.
std::span<const WebAsset> WebAssets();

// The file called `name` (no directories: "app.js"), or null. A lookup in the embedded table
// only, so no request path can reach the file system.
const WebAsset* FindWebAsset(std::string_view name);

}  // namespace warren::server::ui
