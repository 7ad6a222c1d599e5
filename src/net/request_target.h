#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::net {

// The parts of a request-target (RFC 9112 §3.2) that routing and handlers use.
struct RequestTarget {
  std::string raw_path;   // as received, still percent-encoded: "/a%20b/c"
  std::string path;       // percent-decoded: "/a b/c"
  std::string raw_query;  // after '?', not decoded; empty when there is none
};

// Accepts origin-form ("/p?q") and absolute-form ("http://host/p?q"). Fails with
// InvalidArgument naming the problem for any other form, a malformed escape, an encoded NUL, a
// fragment, or a "." / ".." path segment (rejected rather than normalised, so no handler or
// upstream ever sees a path that climbs out of its prefix).
Result<RequestTarget> ParseRequestTarget(std::string_view target);

}  // namespace warren::net
