#pragma once

// Plain HTTP message types shared by the server, the client and every handler. No Asio or Beast
// here: handlers in api/, server/, gateway/ and envd/ include only this and router.h.

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/principal.h"
#include "base/result.h"

namespace warren::net {

// Header fields in arrival order with case-insensitive lookup. Value type; thread-compatible.
class Headers {
 public:
  // First value of `name`, or nullopt.
  std::optional<std::string_view> Get(std::string_view name) const;
  // All values of `name` in order.
  std::vector<std::string_view> GetAll(std::string_view name) const;
  bool Has(std::string_view name) const { return Get(name).has_value(); }
  // Replaces every field called `name` with one field.
  void Set(std::string_view name, std::string_view value);
  // Appends a field, keeping earlier ones of the same name.
  void Add(std::string_view name, std::string_view value);
  void Remove(std::string_view name);
  // How many fields are called `name`.
  size_t Count(std::string_view name) const;
  // Removes every field, keeping the storage for the next message's.
  void Clear() { fields_.clear(); }
  // Makes room for `n` fields.
  void Reserve(size_t n) { fields_.reserve(n); }

  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }
  size_t size() const { return fields_.size(); }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// The body of a request on a route with RouteOptions::stream_body, read as it arrives.
// Blocking; for blocking handlers only. Not thread-safe (one reader).
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // Reads up to `n` bytes into `buf`. Returns 0 at the end of the body. Fails with
  // ResourceExhausted past the route's body limit, DeadlineExceeded when the client stalls,
  // Unavailable when it disconnects.
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
};

// One request as a handler sees it.
struct Request {
  std::string method;     // "GET", "POST", ... as received
  std::string target;     // raw request-target: "/a%20b/c?x=1"
  std::string path;       // percent-decoded path without the query: "/a b/c"
  std::string raw_query;  // "x=1" (no '?'), not decoded
  Headers headers;
  std::string body;  // the whole body (de-chunked); empty for streamed-body routes
  std::shared_ptr<BodyReader> body_reader;  // set only on RouteOptions::stream_body routes
  std::string remote;                       // peer "ip:port"
  std::string request_id;  // the X-Request-ID the response will carry (the client's if it sent one)
  // Captures of "{name}" segments of the matched route pattern, percent-decoded.
  std::map<std::string, std::string, std::less<>> path_params;
  // Who sent it, set by an authenticating wrapper (Router::WrapAll) before the handler runs;
  // null on routes nobody authenticates.
  std::shared_ptr<const base::Principal> principal;
  // Set by the server: true once the client closed the connection this request came on.
  std::weak_ptr<const std::atomic<bool>> client_gone_flag;

  // Whether the client has gone away (noticed while the handler works, once the request is
  // read). A handler that waits long checks it, so a client that gives up frees what it held.
  bool client_gone() const {
    auto flag = client_gone_flag.lock();
    return flag && flag->load();
  }

  // The first value of query parameter `name`, percent-decoded ('+' is a space), or nullopt.
  std::optional<std::string> Query(std::string_view name) const;
  // Every query parameter in order, percent-decoded. Malformed escapes are kept verbatim.
  std::vector<std::pair<std::string, std::string>> QueryParams() const;
  std::string_view PathParam(std::string_view name) const;
};

// A complete (non-streamed) response.
struct Response {
  int status = 200;
  Headers headers;
  std::string body;

  static Response Json(int status, std::string json_body);
  static Response Text(int status, std::string text_body);
  static Response Empty(int status);
};

// Reason phrase for a status code ("Not Found"); "Unknown" for codes without one.
std::string_view StatusReason(int status);

}  // namespace warren::net
