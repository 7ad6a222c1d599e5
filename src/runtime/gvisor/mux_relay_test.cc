#include "runtime/gvisor/mux_relay.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace warren::runtime::gvisor::mux {
namespace {

using namespace std::chrono_literals;

// A relay with no control frames of its own, standing in for either half; it stops when the
// channel closes.
class TestRelay : public Relay {
 public:
  using Relay::Relay;
  using Relay::Stream;
  using Relay::streams_;

 protected:
  void OnControlFrame(const Frame&) override {}
  void OnChannelClosed() override { Stop(); }
};

struct Pipe {
  base::UniqueFd r, w;
  Pipe() {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    r.reset(fds[0]);
    w.reset(fds[1]);
  }
};

// CPU the relay's thread spent over `wall` (its own clock, so the machine's load is not in it).
std::chrono::milliseconds CpuOver(std::thread& t, std::chrono::milliseconds wall) {
  clockid_t clock;
  EXPECT_EQ(pthread_getcpuclockid(t.native_handle(), &clock), 0);
  timespec a{}, b{};
  clock_gettime(clock, &a);
  std::this_thread::sleep_for(wall);
  clock_gettime(clock, &b);
  auto ns = (b.tv_sec - a.tv_sec) * 1'000'000'000LL + (b.tv_nsec - a.tv_nsec);
  return std::chrono::milliseconds(ns / 1'000'000);
}

// A stream whose client hung up while the stream waits (for the peer to open it, for window,
// for the peer to send): poll reports POLLHUP on it at every turn, asked for or not. The relay
// must sleep, not spin: a sandbox could otherwise keep the host's shim at full CPU by never
// answering.
TEST(MuxRelay, AHungUpStreamThatWaitsCostsNoCpu) {
  Pipe in, out;
  TestRelay relay(in.r.get(), out.w.get());
  int sp[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
  close(sp[1]);  // the client is gone
  TestRelay::Stream waiting;
  waiting.fd.reset(sp[0]);
  waiting.reading = false;  // the peer has not said kOpenOk
  relay.streams_.emplace(1, std::move(waiting));
  int sp2[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp2), 0);
  close(sp2[1]);
  TestRelay::Stream no_credit;
  no_credit.fd.reset(sp2[0]);
  no_credit.send_credit = 0;
  relay.streams_.emplace(3, std::move(no_credit));

  std::thread t([&] { relay.Run(); });
  auto cpu = CpuOver(t, 500ms);
  in.w.reset();  // the channel's EOF ends the relay
  t.join();
  EXPECT_LT(cpu, 100ms) << "the relay spun on hung-up streams";
}

// The peer stopped reading the channel (the sandbox's end of stdin closed): the relay stops
// writing to it, still reads what the peer says to its end, and does not spin meanwhile.
TEST(MuxRelay, APeerThatClosedItsEndIsReadToTheEndWithoutSpinning) {
  signal(SIGPIPE, SIG_IGN);  // as in warren-gvisor-init: EPIPE, not a signal
  Pipe in, out;
  TestRelay relay(in.r.get(), out.w.get());
  out.r.reset();  // nobody reads what the relay writes
  int sp[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
  base::UniqueFd client(sp[1]);
  TestRelay::Stream s;
  s.fd.reset(sp[0]);
  relay.streams_.emplace(1, std::move(s));
  ASSERT_EQ(write(client.get(), "x", 1), 1);  // queues a DATA frame for the closed channel

  std::thread t([&] { relay.Run(); });
  auto cpu = CpuOver(t, 500ms);
  // What the peer still sends arrives: a DATA frame for stream 1 reaches the client.
  std::string frame;
  AppendFrame(frame, FrameType::kData, 1, "bye");
  ASSERT_EQ(write(in.w.get(), frame.data(), frame.size()), static_cast<ssize_t>(frame.size()));
  char buf[8] = {};
  ssize_t n = -1;
  for (int i = 0; i < 200 && n <= 0; ++i) {
    n = read(client.get(), buf, sizeof buf);
    if (n <= 0) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "bye");
  in.w.reset();
  t.join();
  EXPECT_LT(cpu, 100ms) << "the relay spun on a closed channel";
}

}  // namespace
}  // namespace warren::runtime::gvisor::mux
