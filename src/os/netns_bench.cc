// Dialing into another network namespace: setns per call (DialInNetns) against a persistent
// per-namespace dialer thread (NetnsDialer), beside the same operations in the host's own
// namespace as the reference. Needs root (it makes a network namespace); skips otherwise.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>

#include "os/netns.h"

namespace warren::os {
namespace {

using namespace std::chrono_literals;

// A listener on 127.0.0.1 that accepts and closes connections, optionally in a fresh network
// namespace of its own thread.
class Listener {
 public:
  explicit Listener(bool own_namespace) {
    std::promise<bool> ready;
    auto started = ready.get_future();
    thread_ = std::thread([this, own_namespace, &ready] {
      if (own_namespace && (unshare(CLONE_NEWNET) != 0 || BringLoopbackUpRaw() != 0)) {
        ready.set_value(false);
        return;
      }
      ns_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
      fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
      listen(fd_, 1024);
      socklen_t len = sizeof a;
      getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
      port_ = ntohs(a.sin_port);
      ready.set_value(true);
      for (;;) {
        int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        // The client resets the connection (see Reset); wait for that, then close.
        char b;
        while (read(c, &b, 1) > 0) {
        }
        close(c);
      }
    });
    ok_ = started.get();
  }
  ~Listener() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
    close(ns_fd_);
  }
  bool ok() const { return ok_; }
  int ns_fd() const { return ns_fd_; }
  uint16_t port() const { return port_; }

 private:
  std::thread thread_;
  bool ok_ = false;
  int fd_ = -1;
  int ns_fd_ = -1;
  uint16_t port_ = 0;
};

// Closes with a reset instead of a FIN: hundreds of thousands of connections would otherwise
// fill the namespace with TIME_WAIT sockets and stall later connects.
void Reset(int fd) {
  linger lg{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(fd);
}

bool Root(benchmark::State& state) {
  if (geteuid() == 0) return true;
  state.SkipWithError("needs root to make a network namespace");
  return false;
}

void BM_SocketInHostNamespace(benchmark::State& state) {
  for (auto _ : state) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    benchmark::DoNotOptimize(fd);
    close(fd);
  }
}
BENCHMARK(BM_SocketInHostNamespace);

void BM_SocketInSandboxNamespaceSetnsPerCall(benchmark::State& state) {
  if (!Root(state)) return;
  Listener l(true);
  for (auto _ : state) {
    auto fd = SocketInNetns(l.ns_fd(), AF_INET, SOCK_STREAM);
    if (!fd.ok()) state.SkipWithError(fd.status().ToString().c_str());
  }
}
BENCHMARK(BM_SocketInSandboxNamespaceSetnsPerCall);

void BM_DialHostLoopback(benchmark::State& state) {
  Listener l(false);
  for (auto _ : state) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    Status st = ConnectLoopback(fd, l.port(), 1s);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    Reset(fd);
  }
}
BENCHMARK(BM_DialHostLoopback);

void BM_DialInNetnsSetnsPerCall(benchmark::State& state) {
  if (!Root(state)) return;
  Listener l(true);
  for (auto _ : state) {
    auto fd = DialInNetns(l.ns_fd(), l.port(), 1s);
    if (!fd.ok()) state.SkipWithError(fd.status().ToString().c_str());
    if (fd.ok()) Reset(fd->release());
  }
}
BENCHMARK(BM_DialInNetnsSetnsPerCall);

void BM_DialInNetnsPersistentDialer(benchmark::State& state) {
  if (!Root(state)) return;
  Listener l(true);
  auto dialer = NetnsDialer::Create(l.ns_fd());
  if (!dialer.ok()) {
    state.SkipWithError(dialer.status().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    auto fd = (*dialer)->Dial(l.port(), 1s);
    if (!fd.ok()) state.SkipWithError(fd.status().ToString().c_str());
    if (fd.ok()) Reset(fd->release());
  }
}
BENCHMARK(BM_DialInNetnsPersistentDialer);

}  // namespace
}  // namespace warren::os
