#include "net/router.h"

#include <algorithm>

#include "base/check.h"
#include "base/strings.h"

namespace warren::net {

std::string_view RelayStepName(RelayStep step) {
  switch (step) {
    case RelayStep::kNone:
      return "none";
    case RelayStep::kUpstream:
      return "upstream_socket";
    case RelayStep::kSendRequest:
      return "send_request";
    case RelayStep::kRequestBody:
      return "request_body";
    case RelayStep::kReadResponse:
      return "read_response";
    case RelayStep::kWriteResponse:
      return "write_response";
    case RelayStep::kClientGone:
      return "client_gone";
    case RelayStep::kAborted:
      return "aborted";
    case RelayStep::kTimedOut:
      return "timed_out";
    case RelayStep::kShutdown:
      return "shutdown";
  }
  return "unknown";
}

// One node per pattern segment. Captures are unnamed in the tree; each route keeps the names
// of its captures in order, so "/a/{id}" (GET) and "/a/{name}" (PUT) can share a node.
struct Router::Node {
  struct Route {
    Handler handler;
    RouteOptions options;
    std::vector<std::string> param_names;
    std::string pattern;  // as added, for WrapAll
  };
  using Routes = std::map<std::string, Route, std::less<>>;  // by method

  // Matching state threaded through the depth-first search.
  struct Search {
    std::string_view method;
    const std::vector<std::string_view>& segments;
    std::string_view raw_path;
    std::vector<std::string> captured;
    // Set when some route matched the path but not the method (for 405).
    std::string allow;
  };

  std::map<std::string, std::unique_ptr<Node>, std::less<>> literals;
  std::unique_ptr<Node> capture;
  Routes rest_routes;  // a final "{name...}", matching the rest of the path
  Routes routes;

  static const Route* FindMethod(const Routes& routes, std::string_view method);
  static std::string AllowList(const Routes& routes);
  // Returns the matching route or null. Literal children are tried before the capture child,
  // and the capture child before a rest capture, backtracking when a branch fails deeper down.
  static const Route* MatchNode(const Node& node, size_t index, Search& s);
  // Calls `wrap` for every route in this subtree.
  void WrapAll(const Wrapper& wrap);
};

namespace {

// Splits "/a/b" into {"a", "b"}; "/" is one empty segment.
std::vector<std::string_view> SplitPath(std::string_view path) {
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  return base::Split(path, '/');
}

// Segments are matched and captured percent-decoded; a malformed escape is kept verbatim.
std::string DecodeSegment(std::string_view raw) {
  if (raw.find('%') == std::string_view::npos) return std::string(raw);
  if (auto decoded = base::PercentDecode(raw, /*plus_is_space=*/false)) return *std::move(decoded);
  return std::string(raw);
}

bool IsCapture(std::string_view seg) {
  return seg.size() >= 3 && seg.front() == '{' && seg.back() == '}';
}

bool IsRestCapture(std::string_view seg) {
  return IsCapture(seg) && seg.size() > 5 && seg.substr(seg.size() - 4) == "...}";
}

}  // namespace

const Router::Node::Route* Router::Node::FindMethod(const Routes& routes, std::string_view method) {
  auto it = routes.find(method);
  if (it != routes.end()) return &it->second;
  // HEAD is GET without the body (the server drops the body of HEAD responses).
  if (method == "HEAD") {
    it = routes.find("GET");
    if (it != routes.end()) return &it->second;
  }
  return nullptr;
}

std::string Router::Node::AllowList(const Routes& routes) {
  std::vector<std::string> methods;
  for (const auto& [method, route] : routes) methods.push_back(method);
  if (routes.count("GET") && !routes.count("HEAD")) methods.push_back("HEAD");
  std::sort(methods.begin(), methods.end());
  return base::Join(methods, ", ");
}

const Router::Node::Route* Router::Node::MatchNode(const Node& node, size_t index, Search& s) {
  if (index == s.segments.size()) {
    if (node.routes.empty()) return nullptr;
    if (const Route* r = FindMethod(node.routes, s.method)) return r;
    if (s.allow.empty()) s.allow = AllowList(node.routes);
    return nullptr;
  }
  std::string segment = DecodeSegment(s.segments[index]);
  if (auto it = node.literals.find(segment); it != node.literals.end()) {
    if (const Route* r = MatchNode(*it->second, index + 1, s)) return r;
  }
  if (node.capture) {
    s.captured.push_back(std::move(segment));
    if (const Route* r = MatchNode(*node.capture, index + 1, s)) return r;
    s.captured.pop_back();
  }
  if (!node.rest_routes.empty()) {
    if (const Route* r = FindMethod(node.rest_routes, s.method)) {
      // The rest starts at segment `index`; take it from the raw path, slashes included.
      const char* start = s.segments[index].data();
      s.captured.push_back(
          DecodeSegment(std::string_view(start, s.raw_path.data() + s.raw_path.size() - start)));
      return r;
    }
    if (s.allow.empty()) s.allow = AllowList(node.rest_routes);
  }
  return nullptr;
}

void Router::Node::WrapAll(const Wrapper& wrap) {
  for (Routes* table : {&routes, &rest_routes}) {
    for (auto& [method, route] : *table) {
      route.handler = wrap(method, route.pattern, route.options, std::move(route.handler));
      CHECK_MSG(route.handler != nullptr, "WrapAll returned a null handler for " << route.pattern);
    }
  }
  for (auto& [segment, child] : literals) child->WrapAll(wrap);
  if (capture) capture->WrapAll(wrap);
}

Router::Router() : root_(std::make_unique<Node>()) {}
Router::~Router() = default;
Router::Router(Router&&) noexcept = default;
Router& Router::operator=(Router&&) noexcept = default;

void Router::Add(std::string_view method, std::string_view pattern, Handler handler,
                 RouteOptions options) {
  CHECK_MSG(!pattern.empty() && pattern.front() == '/',
            "route pattern must start with '/': " << pattern);
  CHECK_MSG(handler != nullptr, "null handler for " << method << " " << pattern);
  std::vector<std::string_view> segments = SplitPath(pattern);
  Node* node = root_.get();
  std::vector<std::string> names;
  for (size_t i = 0; i < segments.size(); ++i) {
    std::string_view seg = segments[i];
    if (IsRestCapture(seg)) {
      CHECK_MSG(i + 1 == segments.size(), "'{name...}' must be the last segment: " << pattern);
      names.emplace_back(seg.substr(1, seg.size() - 5));
      auto [it, inserted] = node->rest_routes.try_emplace(
          std::string(method),
          Node::Route{std::move(handler), options, names, std::string(pattern)});
      CHECK_MSG(inserted, "duplicate route " << method << " " << pattern);
      return;
    }
    if (IsCapture(seg)) {
      names.emplace_back(seg.substr(1, seg.size() - 2));
      if (!node->capture) node->capture = std::make_unique<Node>();
      node = node->capture.get();
      continue;
    }
    auto& child = node->literals[std::string(seg)];
    if (!child) child = std::make_unique<Node>();
    node = child.get();
  }
  auto [it, inserted] = node->routes.try_emplace(
      std::string(method),
      Node::Route{std::move(handler), options, std::move(names), std::string(pattern)});
  CHECK_MSG(inserted, "duplicate route " << method << " " << pattern);
}

void Router::SetFallback(Handler handler, RouteOptions options) {
  CHECK(handler != nullptr);
  fallback_ = std::make_unique<std::pair<Handler, RouteOptions>>(std::move(handler), options);
}

void Router::WrapAll(const Wrapper& wrap) {
  root_->WrapAll(wrap);
  if (fallback_) {
    fallback_->first = wrap("", "", fallback_->second, std::move(fallback_->first));
    CHECK_MSG(fallback_->first != nullptr, "WrapAll returned a null fallback handler");
  }
}

Router::Match Router::Find(std::string_view method, std::string_view path) const {
  Match match;
  std::vector<std::string_view> segments = SplitPath(path);
  Node::Search search{method, segments, path, {}, {}};
  if (const Node::Route* route = Node::MatchNode(*root_, 0, search)) {
    match.handler = &route->handler;
    match.options = &route->options;
    for (size_t i = 0; i < route->param_names.size() && i < search.captured.size(); ++i) {
      match.params.emplace(route->param_names[i], std::move(search.captured[i]));
    }
    return match;
  }
  if (fallback_) {
    match.handler = &fallback_->first;
    match.options = &fallback_->second;
    return match;
  }
  if (!search.allow.empty()) {
    match.error_status = 405;
    match.allow = std::move(search.allow);
  } else {
    match.error_status = 404;
  }
  return match;
}

std::string DefaultFairnessKey(const Request& request) {
  // Tagged, so a key that happens to read like an address is not that address's key.
  if (auto key = request.headers.Get("X-API-Key")) return "key " + std::string(*key);
  if (auto auth = request.headers.Get("Authorization")) return "key " + std::string(*auth);
  std::string_view remote = request.remote;
  auto colon = remote.rfind(':');  // "1.2.3.4:port", "[::1]:port"
  if (colon != std::string_view::npos) remote = remote.substr(0, colon);
  return "address " + std::string(remote);
}

}  // namespace warren::net
