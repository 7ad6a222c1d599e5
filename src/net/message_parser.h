#pragma once

// Incremental HTTP/1.1 parsers for requests (server side) and responses (client and proxy
// side). Beast's basic_parser does the tokenising; these classes add our limits, our error
// messages and the head fields we act on, and keep Beast out of every header.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "net/http.h"

namespace warren::net {

// What the server needs from a request head.
struct RequestHead {
  std::string method;
  std::string target;
  int version = 11;  // 10 or 11
  Headers headers;
  bool keep_alive = true;  // per the version and Connection
  bool chunked = false;
  std::optional<uint64_t> content_length;
  bool expect_continue = false;  // "Expect: 100-continue"
  bool upgrade = false;          // Connection: upgrade with an Upgrade field

  bool has_body() const { return chunked || content_length.value_or(0) > 0; }
};

// Parses one request after another from a connection's bytes. Not thread-safe (one per
// connection). Errors: ResourceExhausted when the head exceeds max_header_bytes (431) or the
// body exceeds its limit (413); InvalidArgument for anything malformed (400), with a message
// saying what.
class RequestParser {
 public:
  explicit RequestParser(size_t max_header_bytes);
  ~RequestParser();
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // Forgets the previous message; the next bytes start a new request.
  void Reset();

  // Feeds bytes while the head is incomplete. Returns how many were consumed: 0 until the whole
  // head is present (call again with the same bytes plus more), then the head's length.
  Result<size_t> ParseHead(std::string_view data);
  bool head_done() const;
  const RequestHead& head() const;
  RequestHead& mutable_head();

  // The largest body accepted; set after the head, before the body.
  void SetBodyLimit(uint64_t max_bytes);
  // Feeds body bytes and appends the decoded body (chunk framing removed) to `out`. Returns
  // how many input bytes were consumed; the rest belongs to the next message or needs more.
  Result<size_t> ParseBody(std::string_view data, std::string& out);
  bool body_done() const;
  // Decoded body bytes seen so far.
  uint64_t body_bytes() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// What a client or proxy needs from a response head.
struct ResponseHead {
  int status = 0;
  int version = 11;
  Headers headers;
  bool keep_alive = true;
  bool chunked = false;
  std::optional<uint64_t> content_length;
  bool upgrade = false;  // 101 with Connection: upgrade
};

// Parses one response. Not thread-safe. Errors: ResourceExhausted past the header or body
// limit, InvalidArgument for a malformed response, Unavailable when the peer closed early.
class ResponseParser {
 public:
  explicit ResponseParser(size_t max_header_bytes);
  ~ResponseParser();
  ResponseParser(const ResponseParser&) = delete;
  ResponseParser& operator=(const ResponseParser&) = delete;

  // Starts a new message. A response to HEAD has no body whatever its headers say.
  void Reset(bool head_request);
  void SetBodyLimit(std::optional<uint64_t> max_bytes);

  // Feeds bytes; parses the head when complete and then as much body as there is, appending
  // the decoded body to `out`. Returns the bytes consumed (0 while the head is incomplete).
  // A 1xx other than 101 completes as an empty message: check head().status and Reset.
  Result<size_t> Parse(std::string_view data, std::string& out);
  // The peer closed the connection: completes a body delimited by the close, else fails.
  Status ParseEof();

  bool head_done() const;
  bool done() const;
  // The body runs until the connection closes (no length, not chunked).
  bool body_until_eof() const;
  const ResponseHead& head() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warren::net
