// os::DialInNetns: a socket made in another network namespace from the host.
#include "os/netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <future>
#include <thread>

namespace warren::os {
namespace {

using namespace std::chrono_literals;

uint64_t OwnNetnsInode() {
  struct stat st;
  return stat("/proc/thread-self/ns/net", &st) == 0 ? st.st_ino : 0;
}

// A thread that moves into a new network namespace, listens on its loopback and answers each
// connection with a greeting. Owns the thread.
class NamespacedServer {
 public:
  NamespacedServer() {
    std::promise<void> ready;
    auto started = ready.get_future();
    thread_ = std::thread([this, &ready] {
      if (unshare(CLONE_NEWNET) != 0 || BringLoopbackUpRaw() != 0) {
        ready.set_value();
        return;
      }
      ns_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
      listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a);
      listen(listener_, 16);
      socklen_t len = sizeof a;
      getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
      port_ = ntohs(a.sin_port);
      ready.set_value();
      for (;;) {
        int c = accept(listener_, nullptr, nullptr);
        if (c < 0) return;
        (void)!write(c, "in-namespace", 12);
        close(c);
      }
    });
    started.wait();
  }
  ~NamespacedServer() {
    shutdown(listener_, SHUT_RDWR);
    thread_.join();
    close(listener_);
    close(ns_fd_);
  }
  int ns_fd() const { return ns_fd_; }
  uint16_t port() const { return port_; }

 private:
  std::thread thread_;
  int ns_fd_ = -1;
  int listener_ = -1;
  uint16_t port_ = 0;
};

std::string ReadAll(int fd) {
  int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string out;
  char buf[64];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(NetnsTest, DialReachesTheListenerInsideAndTheThreadStaysHome) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  NamespacedServer server;
  ASSERT_GE(server.ns_fd(), 0);
  uint64_t home = OwnNetnsInode();
  auto fd = DialInNetns(server.ns_fd(), server.port(), 1s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(ReadAll(fd->get()), "in-namespace");
  EXPECT_EQ(OwnNetnsInode(), home) << "the dialing thread must be back in its own namespace";

  auto dialer = NetnsDialer::Create(server.ns_fd());
  ASSERT_TRUE(dialer.ok()) << dialer.status();
  auto fd2 = (*dialer)->Dial(server.port(), 1s);
  ASSERT_TRUE(fd2.ok()) << fd2.status();
  EXPECT_EQ(ReadAll(fd2->get()), "in-namespace");
}

TEST(NetnsTest, NothingListeningIsUnavailable) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  NamespacedServer server;
  // Port 1 is closed in a fresh namespace.
  auto fd = DialInNetns(server.ns_fd(), 1, 1s);
  EXPECT_EQ(fd.status().code(), StatusCode::kUnavailable) << fd.status();
  // A bad namespace fd is an error, and the thread is unharmed.
  uint64_t home = OwnNetnsInode();
  auto bad = DialInNetns(0, server.port(), 1s);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(OwnNetnsInode(), home);
}

}  // namespace
}  // namespace warren::os
