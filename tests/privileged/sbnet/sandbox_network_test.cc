#include "sbnet/sandbox_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/unique_fd.h"
#include "os/netns.h"
#include "os/rtnetlink.h"

namespace warren::sbnet {
namespace {

using os::Ipv4;

// A network namespace held open by a child process, with its loopback up; killed on
// destruction, which ends the namespace and every link in it.
class Namespace {
 public:
  Namespace() {
    int p[2];
    EXPECT_EQ(pipe2(p, O_CLOEXEC), 0);
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(p[0]);
      if (unshare(CLONE_NEWNET) != 0 || os::BringLoopbackUpRaw() != 0) _exit(1);
      char ok = 1;
      (void)!write(p[1], &ok, 1);
      pause();
      _exit(0);
    }
    close(p[1]);
    char ok = 0;
    EXPECT_EQ(read(p[0], &ok, 1), 1);
    close(p[0]);
    fd_ = base::UniqueFd(
        open(("/proc/" + std::to_string(pid_) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
  }
  ~Namespace() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  int fd() const { return fd_.get(); }

 private:
  pid_t pid_ = -1;
  base::UniqueFd fd_;
};

Ipv4 Ip(const char* s) { return *os::ParseIpv4(s); }

sockaddr_in Addr(Ipv4 ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = ip.be;
  return a;
}

base::UniqueFd Listen(int ns_fd, Ipv4 ip, uint16_t port) {
  auto s =
      ns_fd >= 0
          ? os::SocketInNetns(ns_fd, AF_INET, SOCK_STREAM)
          : Result<base::UniqueFd>(base::UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)));
  EXPECT_TRUE(s.ok());
  int one = 1;
  setsockopt(s->get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = Addr(ip, port);
  EXPECT_EQ(bind(s->get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  EXPECT_EQ(listen(s->get(), 16), 0);
  return std::move(*s);
}

// Connects from inside `ns_fd`; the peer as the listener saw it when `listener` accepts.
// Empty when the connection was not made within `ms` (a dropped SYN).
std::string Connect(int ns_fd, Ipv4 ip, uint16_t port, int listener = -1, int ms = 400) {
  auto s = os::SocketInNetns(ns_fd, AF_INET, SOCK_STREAM | SOCK_NONBLOCK);
  if (!s.ok()) return "";
  sockaddr_in a = Addr(ip, port);
  if (connect(s->get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
    return "";
  }
  pollfd p = {s->get(), POLLOUT, 0};
  if (poll(&p, 1, ms) != 1) return "";
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(s->get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return "";
  if (listener < 0) return "connected";
  sockaddr_in peer{};
  socklen_t plen = sizeof peer;
  base::UniqueFd accepted(
      accept4(listener, reinterpret_cast<sockaddr*>(&peer), &plen, SOCK_CLOEXEC));
  if (!accepted) return "";
  return os::FormatIpv4(Ipv4{peer.sin_addr.s_addr});
}

// A simulated internet: a namespace holding 9.9.9.9, linked to the host over 203.0.113.8/30,
// with a host route to 9.9.9.9 through it. Nothing is routed anywhere else.
class Internet {
 public:
  Internet() {
    auto host = os::RouteNetlink::Open();
    host->DeleteLink("wtnet0").IgnoreError();
    EXPECT_TRUE(host->CreateVethPair("wtnet0", "eth0", ns_.fd()).ok());
    int hi = *host->LinkIndex("wtnet0");
    EXPECT_TRUE(host->AddAddress(hi, {Ip("203.0.113.9"), 30}).ok());
    EXPECT_TRUE(host->SetLinkUp(hi).ok());
    auto in = os::RouteNetlink::OpenInNetns(ns_.fd());
    int ii = *in->LinkIndex("eth0");
    EXPECT_TRUE(in->AddAddress(ii, {Ip("203.0.113.10"), 30}).ok());
    EXPECT_TRUE(in->AddAddress(*in->LinkIndex("lo"), {Ip("9.9.9.9"), 32}).ok());
    EXPECT_TRUE(in->SetLinkUp(ii).ok());
    EXPECT_TRUE(in->AddRoute({Ip("0.0.0.0"), 0}, ii, Ip("203.0.113.9")).ok());
    EXPECT_TRUE(host->AddRoute({Ip("9.9.9.9"), 32}, hi, Ip("203.0.113.10")).ok());
    web_ = Listen(ns_.fd(), Ip("9.9.9.9"), 80);
  }
  ~Internet() {
    if (auto host = os::RouteNetlink::Open(); host.ok()) host->DeleteLink("wtnet0").IgnoreError();
  }
  int web() const { return web_.get(); }

 private:
  Namespace ns_;
  base::UniqueFd web_;
};

class SandboxNetworkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    NetworkOptions o;
    o.range = *os::ParseIpv4Prefix("10.250.7.0/24");
    o.resolvers = {Ip("9.9.9.9")};
    o.resolv_conf_path = ::testing::TempDir() + "/resolv.conf";
    auto made = SandboxNetwork::Create(o);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    net_ = std::move(*made);
    ASSERT_TRUE(net_->Install().ok());
    internet_ = std::make_unique<Internet>();
  }
  void TearDown() override {
    if (net_) {
      EXPECT_TRUE(net_->RemoveTable().ok());
    }
  }

  std::unique_ptr<SandboxNetwork> net_;
  std::unique_ptr<Internet> internet_;
};

TEST_F(SandboxNetworkTest,
       ASandboxReachesTheInternetMasqueradedAndNothingOfTheHostOrItsNeighbours) {
  Namespace a, b;
  auto la = net_->Attach("a", a.fd(), {});
  auto lb = net_->Attach("b", b.fd(), {});
  ASSERT_TRUE(la.ok()) << la.status().ToString();
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
  EXPECT_NE(la->address, lb->address);

  EXPECT_EQ(Connect(a.fd(), Ip("9.9.9.9"), 80, internet_->web()), "203.0.113.9")
      << "out through the host, its source rewritten to the host's";

  // The host on the gateway address, on its other addresses, and another sandbox: nothing.
  base::UniqueFd host_port = Listen(-1, Ip("0.0.0.0"), 18931);
  EXPECT_EQ(Connect(a.fd(), net_->gateway(), 18931), "");
  EXPECT_EQ(Connect(a.fd(), Ip("203.0.113.9"), 18931), "");
  base::UniqueFd neighbour = Listen(b.fd(), Ip("0.0.0.0"), 8080);
  EXPECT_EQ(Connect(a.fd(), lb->address, 8080), "");
  EXPECT_EQ(Connect(b.fd(), lb->address, 8080), "connected") << "its own address still works";

  std::string resolv;
  FILE* f = fopen(net_->options().resolv_conf_path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  char line[256];
  while (fgets(line, sizeof line, f)) resolv += line;
  fclose(f);
  EXPECT_NE(resolv.find("nameserver 9.9.9.9\n"), std::string::npos) << resolv;

  net_->Detach(*la, /*namespace_gone=*/false);
  net_->Detach(*lb, /*namespace_gone=*/false);
  EXPECT_EQ(net_->attached(), 0u);
}

TEST_F(SandboxNetworkTest, PoliciesApplyToTheNextConnectionAndAllowOutWinsOverDenyOut) {
  Namespace a;
  auto deny_all = MakeEgressPolicy(false, {}, {});
  auto la = net_->Attach("a", a.fd(), *deny_all);
  ASSERT_TRUE(la.ok()) << la.status().ToString();
  EXPECT_EQ(Connect(a.fd(), Ip("9.9.9.9"), 80), "") << "no internet from its first packet";

  EXPECT_TRUE(net_->SetPolicy(la->address, *MakeEgressPolicy(false, {"9.9.9.9"}, {})).ok());
  EXPECT_EQ(Connect(a.fd(), Ip("9.9.9.9"), 80, internet_->web()), "203.0.113.9");

  EXPECT_TRUE(net_->SetPolicy(la->address, *MakeEgressPolicy(true, {}, {"9.9.0.0/16"})).ok());
  EXPECT_EQ(Connect(a.fd(), Ip("9.9.9.9"), 80), "");
  EXPECT_TRUE(
      net_->SetPolicy(la->address, *MakeEgressPolicy(true, {"9.9.9.9/32"}, {"0.0.0.0/0"})).ok());
  EXPECT_EQ(Connect(a.fd(), Ip("9.9.9.9"), 80, internet_->web()), "203.0.113.9");

  EXPECT_TRUE(net_->SetPolicy(la->address, EgressPolicy{}).ok());
  EXPECT_EQ(Connect(a.fd(), Ip("9.9.9.9"), 80, internet_->web()), "203.0.113.9");
  net_->Detach(*la, /*namespace_gone=*/false);
}

TEST_F(SandboxNetworkTest, DetachLeavesNoLinkNoChainAndNoConntrackEntry) {
  Namespace a;
  auto la = net_->Attach("a", a.fd(), *MakeEgressPolicy(true, {}, {"9.9.9.10"}));
  ASSERT_TRUE(la.ok()) << la.status().ToString();
  EXPECT_EQ(Connect(a.fd(), Ip("9.9.9.9"), 80, internet_->web()), "203.0.113.9");
  net_->Detach(*la, /*namespace_gone=*/false);
  auto host = os::RouteNetlink::Open();
  EXPECT_EQ(host->LinkIndex(la->host_link).status().code(), StatusCode::kNotFound);
  std::string cmd = "conntrack -L -s " + os::FormatIpv4(la->address) + " 2>/dev/null | wc -l";
  FILE* p = popen(cmd.c_str(), "r");
  char out[32] = {0};
  ASSERT_NE(fgets(out, sizeof out, p), nullptr);
  pclose(p);
  EXPECT_EQ(std::string(out), "0\n");
  auto nft = Nftables::Create();
  EXPECT_FALSE((*nft)->Run("list chain inet warren_10_250_7_0_24 sandbox_0afa0702").ok())
      << "the policy chain is gone";
  // The address comes back to the pool: a range this size gives out every one again.
  EXPECT_EQ(net_->attached(), 0u);
}

// A restart, reset or in-place update of a sandbox attaches its new namespace asking for the
// address it had: it gets it back when nothing took it meanwhile, another one when something did.
TEST_F(SandboxNetworkTest, AReattachedSandboxGetsItsAddressBackWhenItIsFree) {
  Namespace first, second, other;
  auto la = net_->Attach("a", first.fd(), {});
  ASSERT_TRUE(la.ok()) << la.status().ToString();
  const os::Ipv4 had = la->address;
  net_->Detach(*la, /*namespace_gone=*/false);
  auto again = net_->Attach("a", second.fd(), {}, had);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->address, had);
  EXPECT_EQ(Connect(second.fd(), Ip("9.9.9.9"), 80, internet_->web()), "203.0.113.9");
  auto taken = net_->Attach("b", other.fd(), {}, had);
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_NE(taken->address, had) << "an address in use is never given twice";
  net_->Detach(*again, /*namespace_gone=*/false);
  net_->Detach(*taken, /*namespace_gone=*/false);
  EXPECT_EQ(net_->attached(), 0u);
}

TEST_F(SandboxNetworkTest, ANewServerKeepsAdoptedPoliciesWithoutAGapAndDropsStaleOnes) {
  Namespace kept, gone;
  auto lk = net_->Attach("kept", kept.fd(), *MakeEgressPolicy(true, {}, {"9.9.9.9"}));
  auto lg = net_->Attach("gone", gone.fd(), *MakeEgressPolicy(true, {}, {"9.9.9.9"}));
  ASSERT_TRUE(lk.ok() && lg.ok());
  EXPECT_EQ(Connect(kept.fd(), Ip("9.9.9.9"), 80), "");

  // The next server: made, then adopting `kept` only (`gone` died while no server ran). Until it
  // installs its table the old one holds; after, `kept` is still denied and `gone`'s address
  // has no chain left for its next holder.
  NetworkOptions o = net_->options();
  net_.reset();
  auto next = SandboxNetwork::Create(o);
  ASSERT_TRUE(next.ok()) << next.status();
  net_ = std::move(*next);
  EXPECT_EQ(Connect(kept.fd(), Ip("9.9.9.9"), 80), "") << "the old table still holds";
  ASSERT_TRUE(net_->Adopt(*lk, *MakeEgressPolicy(true, {}, {"9.9.9.9"})).ok());
  EXPECT_EQ(net_->Attach("early", gone.fd(), {}).status().code(), StatusCode::kFailedPrecondition)
      << "nothing is attached before the table is in";
  ASSERT_TRUE(net_->Install().ok());
  EXPECT_EQ(Connect(kept.fd(), Ip("9.9.9.9"), 80), "");
  auto nft = Nftables::Create();
  EXPECT_TRUE((*nft)->Run("list chain inet warren_10_250_7_0_24 sandbox_0afa0702").ok());
  EXPECT_FALSE((*nft)->Run("list chain inet warren_10_250_7_0_24 sandbox_0afa0703").ok())
      << "the chain of a sandbox no one adopted is gone";
  net_->Detach(*lk, /*namespace_gone=*/false);
  if (auto host = os::RouteNetlink::Open(); host.ok())
    host->DeleteLink(lg->host_link).IgnoreError();
}

TEST_F(SandboxNetworkTest, AttachingToSomethingThatIsNotANamespaceFailsAndKeepsNothing) {
  base::UniqueFd not_ns(open("/dev/null", O_RDONLY | O_CLOEXEC));
  auto l = net_->Attach("x", not_ns.get(), *MakeEgressPolicy(false, {}, {}));
  EXPECT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("sandbox x: egress"), std::string::npos)
      << l.status().ToString();
  EXPECT_EQ(net_->attached(), 0u);
}

}  // namespace
}  // namespace warren::sbnet

namespace warren::sbnet {
namespace {

// A blocking connection from inside `ns_fd` with `request` sent; -1 fd when not connected.
base::UniqueFd SendFrom(int ns_fd, Ipv4 ip, uint16_t port, const std::string& request) {
  auto s = os::SocketInNetns(ns_fd, AF_INET, SOCK_STREAM);
  if (!s.ok()) return {};
  timeval tv{.tv_sec = 3, .tv_usec = 0};
  setsockopt(s->get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in a = Addr(ip, port);
  if (connect(s->get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return {};
  if (write(s->get(), request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    return {};
  }
  return std::move(*s);
}

// What `listener` receives on its next connection within `ms`; empty when none comes.
std::string Received(int listener, size_t bytes, int ms = 1000) {
  pollfd p = {listener, POLLIN, 0};
  if (poll(&p, 1, ms) != 1) return "";
  base::UniqueFd c(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  std::string out(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = read(c.get(), out.data() + got, bytes - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  if (!out.empty()) (void)!write(c.get(), "pong", 4);
  return out;
}

TEST_F(SandboxNetworkTest, DomainRulesRelayNamedHostsSendNothingOnForOthersAndEndWithTheSandbox) {
  ASSERT_NE(net_->domain_proxy(), nullptr);
  Namespace a;
  auto la = net_->Attach("a", a.fd(), *MakeEgressPolicy(true, {"allowed.test"}, {"0.0.0.0/0"}));
  ASSERT_TRUE(la.ok()) << la.status().ToString();
  const std::string allowed = "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n";
  const std::string other = "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n";

  // Allowed: the request arrives whole at the original destination, the answer comes back.
  base::UniqueFd kept = SendFrom(a.fd(), Ip("9.9.9.9"), 80, allowed);
  ASSERT_TRUE(kept);
  EXPECT_EQ(Received(internet_->web(), allowed.size()), allowed);
  char buf[8] = {};
  EXPECT_EQ(read(kept.get(), buf, 4), 4);
  EXPECT_EQ(std::string(buf, 4), "pong");

  // Another name at the same address: closed, and not a byte reached the destination.
  base::UniqueFd refused = SendFrom(a.fd(), Ip("9.9.9.9"), 80, other);
  ASSERT_TRUE(refused);
  EXPECT_LE(read(refused.get(), buf, 1), 0);
  EXPECT_EQ(Received(internet_->web(), 1, 300), "");
  EXPECT_EQ(net_->domain_proxy()->stats().denied, 1u);
  // One of the host's own addresses, public-looking, with the allowed name: the proxy dials
  // from the host, so it refuses the host itself as the input chain does.
  ASSERT_EQ(system("ip addr add 5.5.5.5/32 dev lo"), 0);
  {
    base::UniqueFd host_web = Listen(-1, Ip("5.5.5.5"), 80);
    base::UniqueFd to_host = SendFrom(a.fd(), Ip("5.5.5.5"), 80, allowed);
    ASSERT_TRUE(to_host);
    EXPECT_LE(read(to_host.get(), buf, 1), 0);
    EXPECT_EQ(Received(host_web.get(), 1, 300), "") << "the host's own address";
  }
  ASSERT_EQ(system("ip addr del 5.5.5.5/32 dev lo"), 0);
  EXPECT_EQ(net_->domain_proxy()->stats().denied, 2u);
  // Straight at the proxy's port on the gateway (not redirected): nothing.
  EXPECT_EQ(Connect(a.fd(), net_->gateway(), net_->domain_proxy()->http_port()), "");

  // The policy replaced: the next connection with the same name is refused, and the relay it
  // had open is cut.
  ASSERT_TRUE(net_->SetPolicy(la->address, *MakeEgressPolicy(false, {"x.test"}, {})).ok());
  base::UniqueFd after = SendFrom(a.fd(), Ip("9.9.9.9"), 80, allowed);
  ASSERT_TRUE(after);
  EXPECT_LE(read(after.get(), buf, 1), 0);
  EXPECT_LE(read(kept.get(), buf, 1), 0) << "cut by the new policy";

  // The sandbox goes: a relay still open through the proxy is cut.
  const std::string x = "GET / HTTP/1.1\r\nHost: x.test\r\n\r\n";
  base::UniqueFd open = SendFrom(a.fd(), Ip("9.9.9.9"), 80, x);
  ASSERT_TRUE(open);
  EXPECT_EQ(Received(internet_->web(), x.size()), x);
  for (int i = 0; i < 100 && net_->domain_proxy()->stats().open != 1; ++i) usleep(10'000);
  EXPECT_EQ(net_->domain_proxy()->stats().open, 1u);
  net_->Detach(*la, /*namespace_gone=*/false);
  for (int i = 0; i < 100 && net_->domain_proxy()->stats().open > 0; ++i) usleep(10'000);
  EXPECT_EQ(net_->domain_proxy()->stats().open, 0u);
}

}  // namespace
}  // namespace warren::sbnet
