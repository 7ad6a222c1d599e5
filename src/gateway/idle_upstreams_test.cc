#include "gateway/idle_upstreams.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/testing/fake_clock.h"

namespace warren::gateway {
namespace {

using namespace std::chrono_literals;

// A connected pair: `ours` goes into the pool, `peer` plays the server.
struct Pair {
  Pair() {
    int fds[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    ours = base::UniqueFd(fds[0]);
    peer = base::UniqueFd(fds[1]);
  }
  base::UniqueFd ours;
  base::UniqueFd peer;
};

class IdleUpstreamsTest : public ::testing::Test {
 protected:
  base::FakeClock clock_;
  IdleUpstreams pool_{clock_, IdleUpstreamOptions{.max_per_port = 2, .max_total = 3}};
};

TEST_F(IdleUpstreamsTest, TakesTheNewestCleanConnectionOfTheSameGeneration) {
  Pair a, b;
  int a_fd = a.ours.get();
  int b_fd = b.ours.get();
  pool_.Put("i1", 8080, 7, std::move(a.ours));
  pool_.Put("i1", 8080, 7, std::move(b.ours));
  EXPECT_EQ(pool_.size(), 2u);
  EXPECT_FALSE(pool_.Take("i1", 9090, 7)) << "another port";
  EXPECT_FALSE(pool_.Take("i2", 8080, 7)) << "another sandbox";
  base::UniqueFd got = pool_.Take("i1", 8080, 7);
  EXPECT_EQ(got.get(), b_fd);
  got = pool_.Take("i1", 8080, 7);
  EXPECT_EQ(got.get(), a_fd);
  EXPECT_FALSE(pool_.Take("i1", 8080, 7));
  EXPECT_EQ(pool_.size(), 0u);
}

TEST_F(IdleUpstreamsTest, StaleGenerationsClosedPeersAndStrayBytesAreNeverHandedOut) {
  Pair old_gen, older_gen, closed, chatty;
  pool_.Put("i1", 80, 1, std::move(old_gen.ours));
  pool_.Put("i1", 80, 2, std::move(older_gen.ours));
  EXPECT_FALSE(pool_.Take("i1", 80, 3)) << "both are of older generations";
  EXPECT_EQ(pool_.size(), 0u) << "and were dropped on the way";

  pool_.Put("i1", 80, 3, std::move(closed.ours));
  closed.peer.reset();  // the server closed it while idle
  EXPECT_FALSE(pool_.Take("i1", 80, 3));
  pool_.Put("i1", 80, 3, std::move(chatty.ours));
  ASSERT_EQ(write(chatty.peer.get(), "x", 1), 1);  // bytes nobody asked for
  EXPECT_FALSE(pool_.Take("i1", 80, 3));
}

TEST_F(IdleUpstreamsTest, IdleTimeoutsDependOnThePort) {
  Pair web, envd;
  pool_.Put("i1", 3000, 1, std::move(web.ours));
  pool_.Put("i1", 49983, 1, std::move(envd.ours));
  clock_.Advance(1500ms);
  EXPECT_FALSE(pool_.Take("i1", 3000, 1)) << "past the 1 s default";
  EXPECT_TRUE(pool_.Take("i1", 49983, 1)) << "envd keeps connections for 640 s";
  Pair later;
  pool_.Put("i1", 49983, 1, std::move(later.ours));
  clock_.Advance(31s);
  pool_.Sweep();
  EXPECT_EQ(pool_.size(), 0u);
}

TEST_F(IdleUpstreamsTest, LimitsAndDropSandboxCloseConnections) {
  Pair a, b, c, d;
  pool_.Put("i1", 80, 1, std::move(a.ours));
  pool_.Put("i1", 80, 1, std::move(b.ours));
  pool_.Put("i1", 80, 1, std::move(c.ours));  // over max_per_port: the oldest (a) goes
  EXPECT_EQ(pool_.size(), 2u);
  char byte;
  EXPECT_EQ(read(a.peer.get(), &byte, 1), 0) << "the evicted connection was closed";
  pool_.Put("i2", 80, 1, std::move(d.ours));
  Pair e;
  pool_.Put("i3", 80, 1, std::move(e.ours));  // over max_total: refused and closed
  EXPECT_EQ(pool_.size(), 3u);
  EXPECT_EQ(read(e.peer.get(), &byte, 1), 0);
  pool_.DropSandbox("i1");
  EXPECT_EQ(pool_.size(), 1u);
  EXPECT_EQ(read(b.peer.get(), &byte, 1), 0);
  EXPECT_EQ(read(c.peer.get(), &byte, 1), 0);
  EXPECT_TRUE(pool_.Take("i2", 80, 1));
}

}  // namespace
}  // namespace warren::gateway
