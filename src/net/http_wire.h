#pragma once

// Serialisation helpers shared by the server, the proxy and the client: message heads, chunk
// framing, the Date header and the JSON error body. No Asio or Beast.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "net/http.h"

namespace warren::net {

// The current time as an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), formatted at most once
// per second per thread. The view stays valid until the calling thread's next call.
std::string_view HttpDateNow();

// A client-sent X-Request-ID is echoed only when it is 1..128 characters of
// [A-Za-z0-9._:+/=-]; anything else gets a fresh id.
bool IsSaneRequestId(std::string_view id);

// The body of every error the HTTP layer produces itself, in the shape the E2B SDKs read:
// {"code":413,"message":"..."}.
std::string ErrorJson(int status, std::string_view message);

// Hop-by-hop fields (RFC 9110 §7.6.1) that a proxy must not forward.
bool IsHopByHopHeader(std::string_view name);

// A header line that would break the message (CR, LF or NUL in it, or an empty or
// non-token name) is never written.
bool IsWritableHeader(std::string_view name, std::string_view value);

// How a head frames the body that follows and what it says about the connection.
struct Framing {
  std::optional<uint64_t> content_length;  // writes Content-Length
  bool chunked = false;                    // writes Transfer-Encoding: chunked
  std::string_view connection;             // writes Connection: <value> when not empty
  std::string_view request_id;             // writes X-Request-ID unless the headers have one
  bool date = true;                        // writes Date unless the headers have one
};

// Appends "HTTP/1.1 <status> <reason>" and the headers. Content-Length, Transfer-Encoding and
// Connection in `headers` are skipped: `framing` decides those.
void AppendResponseHead(std::string& out, int status, const Headers& headers,
                        const Framing& framing);
// Appends "<method> <target> HTTP/1.1" and the headers, with the same rules.
void AppendRequestHead(std::string& out, std::string_view method, std::string_view target,
                       const Headers& headers, const Framing& framing);

// A header field borrowed from a message that outlives the call: a proxy writes the fields it
// forwards from the message it read, without copying them into a Headers first.
using HeaderRef = std::pair<std::string_view, std::string_view>;
void AppendResponseHead(std::string& out, int status, std::span<const HeaderRef> headers,
                        const Framing& framing);
void AppendRequestHead(std::string& out, std::string_view method, std::string_view target,
                       std::span<const HeaderRef> headers, const Framing& framing);

// Appends the line that opens a chunk of `size` bytes ("1a\r\n").
void AppendChunkHeader(std::string& out, size_t size);
inline constexpr std::string_view kChunkEnd = "\r\n";
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace warren::net
