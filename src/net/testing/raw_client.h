#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "net/http.h"

namespace warren::net::testing {

// A blocking TCP connection that sends exactly the bytes a test writes and reads exactly what
// the server sent, for asserting on the wire (malformed requests, slow clients, chunk timing).
// Real sockets, no mocks. Not thread-safe.
class RawClient {
 public:
  // Connects to 127.0.0.1:port.
  static Result<RawClient> Connect(uint16_t port);
  // Connects to 127.0.0.1:port from `local_ip` (any of 127.0.0.0/8 works on loopback, so a test
  // can be several clients); empty = the kernel's choice.
  static Result<RawClient> ConnectFrom(const std::string& local_ip, uint16_t port);

  Status Send(std::string_view bytes);
  // Reads until `needle` appears in what was received (kept in received()), or the timeout.
  Status ReadUntil(std::string_view needle,
                   std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Reads one complete response (the head, then a Content-Length, chunked or close-delimited
  // body), consuming it from received(). `head_request` for a response to HEAD.
  Result<Response> ReadResponse(std::chrono::milliseconds timeout = std::chrono::seconds(10),
                                bool head_request = false);
  // True when the server closed the connection (EOF or reset) within `timeout`; bytes that
  // arrive before the close are appended to received().
  bool WaitClosed(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  void Close() { fd_.reset(); }
  // Half-close: no more bytes from us.
  void ShutdownWrite();

  std::string& received() { return received_; }
  int fd() const { return fd_.get(); }
  // The local port (the server's view of this connection's remote port).
  uint16_t local_port() const;

 private:
  explicit RawClient(base::UniqueFd fd) : fd_(std::move(fd)) {}
  friend class RawListener;
  // One read of whatever is available, waiting at most until the deadline. 0 at EOF.
  Result<size_t> ReadSome(std::chrono::steady_clock::time_point deadline);

  base::UniqueFd fd_;
  std::string received_;
};

// A listening socket on 127.0.0.1 whose accepted connections a test drives by hand (an upstream
// that speaks WebSocket-style upgrades, or misbehaves on purpose). Not thread-safe.
class RawListener {
 public:
  static Result<RawListener> Listen();
  uint16_t port() const { return port_; }
  // Waits for the next connection.
  Result<RawClient> Accept(std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  RawListener(base::UniqueFd fd, uint16_t port) : fd_(std::move(fd)), port_(port) {}
  base::UniqueFd fd_;
  uint16_t port_;
};

}  // namespace warren::net::testing
