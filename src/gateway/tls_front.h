#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"

namespace warren::gateway {

struct TlsFrontOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 443;            // 0 = an ephemeral port; see TlsFront::port()
  std::string certificate_chain;  // PEM files (gateway/tls_certificate.h)
  std::string private_key;
  // The plain gateway listener the decrypted bytes go to.
  std::string upstream_address = "127.0.0.1";
  uint16_t upstream_port = 0;
  int threads = 1;
  // Connections open at once, in all and from one client address (the gateway behind sees them
  // all coming from the front, so these are the per-client limits that hold). 0 = no limit.
  size_t max_connections = 16384;
  size_t max_connections_per_address = 4096;
  // A client that has not finished its handshake by then is dropped.
  std::chrono::milliseconds handshake_timeout{10'000};
};

struct TlsFrontStats {
  uint64_t accepted = 0;           // handshakes completed and relayed
  uint64_t failed_handshakes = 0;  // bad certificates, plain HTTP on the TLS port, timeouts
  uint64_t rejected = 0;           // over a connection limit
  uint64_t open = 0;               // now
};

// HTTPS for the gateway: terminates TLS (1.2 and 1.3, the certificate of `*.<domain>`) and
// relays each connection's plaintext to the gateway's own listener, which then routes by the
// `<port>-<sandboxId>.<domain>` Host as it does for plain HTTP. A relay, not a second HTTP
// server, so every routing, auth and limit rule lives in one place. Thread-safe.
class TlsFront {
 public:
  static Result<std::unique_ptr<TlsFront>> Start(TlsFrontOptions options);
  virtual ~TlsFront() = default;

  virtual uint16_t port() const = 0;
  virtual TlsFrontStats stats() const = 0;
  // Stops serving and closes the listener; open connections are cut when the front is
  // destroyed. Idempotent; the destructor calls it.
  virtual void Stop() = 0;
};

}  // namespace warren::gateway
