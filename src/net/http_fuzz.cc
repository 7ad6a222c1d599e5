// Fuzzes the parsing we wrote around Beast: request heads and bodies fed in two pieces the way
// a socket delivers them, request-target parsing, router matching, query strings, request ids,
// responses (the client's and the proxy's side) and host:port parsing. Any crash, sanitizer
// report or broken invariant (trap) is a bug.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/dial.h"
#include "net/http_wire.h"
#include "net/message_parser.h"
#include "net/request_target.h"
#include "net/router.h"

namespace {

using namespace warren::net;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

const Router& TheRouter() {
  static const Router router = [] {
    Router r;
    Handler h = [](Request&&, Responder) {};
    r.Add("GET", "/", h);
    r.Add("GET", "/v2/sandboxes", h);
    r.Add("POST", "/v2/sandboxes", h);
    r.Add("GET", "/v2/sandboxes/{id}", h);
    r.Add("GET", "/v2/sandboxes/metrics", h);
    r.Add("DELETE", "/sandboxes/{id}", h);
    r.Add("GET", "/apis/{group}/{version}/namespaces/{ns}/{plural}/{name}", h);
    r.Add("GET", "/files/{path...}", h);
    r.Add("POST", "/files", h, RouteOptions{.blocking = true, .stream_body = true});
    return r;
  }();
  return router;
}

void FuzzRequest(std::string_view input) {
  // Split where the first byte says, so heads arrive in pieces like they do on a socket.
  size_t split = input.empty() ? 0 : static_cast<unsigned char>(input[0]) % (input.size() + 1);
  RequestParser parser(4096);
  size_t consumed = 0;
  for (size_t end : {split, input.size()}) {
    if (parser.head_done() || end < consumed) break;
    auto n = parser.ParseHead(input.substr(consumed, end - consumed));
    if (!n.ok()) return;
    Check(*n <= end - consumed);
    consumed += *n;
  }
  if (!parser.head_done()) return;
  const RequestHead& head = parser.head();
  Check(!head.method.empty());
  Check(head.version == 10 || head.version == 11);

  auto id = head.headers.Get("X-Request-ID");
  if (id && IsSaneRequestId(*id)) Check(id->size() <= 128);

  auto target = ParseRequestTarget(head.target);
  if (target.ok()) {
    Check(!target->path.empty() && target->path.front() == '/');
    Check(target->path.find('\0') == std::string::npos);
    Router::Match m = TheRouter().Find(head.method, target->raw_path);
    Check((m.handler != nullptr) != (m.error_status != 0));
    Check(m.error_status == 0 || m.error_status == 404 || m.error_status == 405);
    Request req;
    req.raw_query = target->raw_query;
    for (const auto& [k, v] : req.QueryParams()) (void)req.Query(k);
  }

  parser.SetBodyLimit(1 << 16);
  std::string body;
  std::string_view rest = input.substr(consumed);
  while (!rest.empty() && !parser.body_done()) {
    auto n = parser.ParseBody(rest, body);
    if (!n.ok() || *n == 0) break;
    Check(*n <= rest.size());
    rest.remove_prefix(*n);
  }
  Check(body.size() <= (1 << 16));
  Check(parser.body_bytes() == body.size());
}

void FuzzResponse(std::string_view input, bool head_request) {
  ResponseParser parser(4096);
  parser.Reset(head_request);
  parser.SetBodyLimit(1 << 16);
  std::string body;
  auto n = parser.Parse(input, body);
  if (!n.ok()) return;
  Check(*n <= input.size());
  if (parser.head_done()) Check(parser.head().status >= 0);
  if (!parser.done()) (void)parser.ParseEof();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  FuzzRequest(input);
  FuzzResponse(input, size % 2 == 0);
  (void)ParseHostPort(input.substr(0, 80));
  return 0;
}
