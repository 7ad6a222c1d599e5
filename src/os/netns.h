#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// Dialing into a sandbox: a sandbox's network namespace has only loopback, and its agent
// listens on 127.0.0.1 there. A socket belongs to the namespace it was created in, whatever
// thread later uses it, so the host creates the socket in a thread that has setns(2)'d into
// the sandbox's namespace and connects from anywhere. No veth, bridge or iptables; the port is
// unreachable from everywhere else.
//
// `ns_fd` may be an nsfs fd (/proc/<pid>/ns/net) or a pidfd (setns then uses that process's
// namespace, race-free against pid reuse).

// Creates a socket in the namespace: setns in, socket(), setns back to the thread's original
// namespace. Costs ~20 µs. Callable from any thread (setns of a network namespace is allowed in
// multi-threaded processes); the thread is always back in its own namespace on return.
Result<base::UniqueFd> SocketInNetns(int ns_fd, int domain, int type, int protocol = 0);

// A TCP connection to 127.0.0.1:port inside the namespace, established within `timeout`.
// The returned socket is non-blocking (callers hand it to an event loop). Unavailable when
// nothing listens there (ECONNREFUSED), DeadlineExceeded on timeout.
Result<base::UniqueFd> DialInNetns(int ns_fd, uint16_t port, std::chrono::milliseconds timeout);
// The same for the network namespace of process `pid` (through a pidfd).
Result<base::UniqueFd> DialInNetnsOfPid(pid_t pid, uint16_t port,
                                        std::chrono::milliseconds timeout);

// Connects a non-blocking socket to 127.0.0.1:port within `timeout`.
Status ConnectLoopback(int fd, uint16_t port, std::chrono::milliseconds timeout);

// The alternative the bench compares against: one thread parked in the namespace for its whole
// life that creates sockets on request, so no setns per dial. Costs a thread per namespace
// and a cross-thread hand-off per socket. Thread-safe; the destructor stops the thread.
class NetnsDialer {
 public:
  static Result<std::unique_ptr<NetnsDialer>> Create(int ns_fd);
  ~NetnsDialer();
  NetnsDialer(const NetnsDialer&) = delete;
  NetnsDialer& operator=(const NetnsDialer&) = delete;

  Result<base::UniqueFd> Dial(uint16_t port, std::chrono::milliseconds timeout);

 private:
  NetnsDialer() = default;
  void Run(int ns_fd);

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_: a request is pending when `requested_`; the thread answers in `fd_`/`err_`.
  bool requested_ = false;
  bool answered_ = false;
  bool stop_ = false;
  bool started_ = false;
  int start_err_ = 0;
  int fd_ = -1;
  int err_ = 0;
};

// Child side (async-signal-safe): sets IFF_UP on "lo" in the current network namespace.
// Returns 0 or -errno.
int BringLoopbackUpRaw() noexcept;

}  // namespace warren::os
