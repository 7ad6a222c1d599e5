#pragma once

#include <string>
#include <string_view>

namespace warren::sbnet {

// The name a client connection asks for, read from its first bytes before anything is sent
// on: the server name (SNI) of a TLS ClientHello, or the Host of an HTTP/1 request.
struct Sniffed {
  bool complete = false;  // false: more bytes are needed to tell
  std::string host;       // lower case, no port, no trailing dot; empty when none is named
};

// `bytes` from the start of a connection to port 443. Complete once the first handshake
// record is in (a ClientHello spans one record in practice; a longer one is judged on what the
// first record holds), or at once when the bytes are not TLS.
Sniffed SniffTlsServerName(std::string_view bytes);

// `bytes` from the start of a connection to port 80. Complete at the end of the request head,
// or at once when the bytes cannot be an HTTP request line.
Sniffed SniffHttpHost(std::string_view bytes);

// The most either reads before it must decide: 16 KiB of record plus its header.
inline constexpr size_t kMaxSniffBytes = 16 * 1024 + 5;

}  // namespace warren::sbnet
