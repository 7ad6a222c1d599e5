#include "image/testing/slow_relay.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "base/check.h"

namespace warren::image::testing {
namespace {

base::UniqueFd Connect(const std::string& address) {
  auto colon = address.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr);
  base::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return {};
  return fd;
}

}  // namespace

SlowRelay::SlowRelay(std::string upstream, int64_t bytes_per_second)
    : rate_(bytes_per_second), upstream_(std::move(upstream)) {
  listener_ = base::UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  CHECK(listener_.valid());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  CHECK(listen(listener_.get(), 64) == 0);
  socklen_t len = sizeof addr;
  CHECK(getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  address_ = fmt::format("127.0.0.1:{}", ntohs(addr.sin_port));
  acceptor_ = std::thread([this] { Accept(); });
}

SlowRelay::~SlowRelay() {
  stopping_.store(true);
  shutdown(listener_.get(), SHUT_RDWR);
  acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

void SlowRelay::set_upstream(std::string upstream) {
  std::lock_guard lock(mu_);
  upstream_ = std::move(upstream);
}

std::string SlowRelay::upstream() const {
  std::lock_guard lock(mu_);
  return upstream_;
}

void SlowRelay::Accept() {
  while (!stopping_.load()) {
    pollfd p{listener_.get(), POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    base::UniqueFd client(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client.valid()) continue;
    std::lock_guard lock(mu_);
    threads_.emplace_back([this, c = std::move(client)]() mutable { Relay(std::move(c)); });
  }
}

void SlowRelay::Relay(base::UniqueFd client) {
  base::UniqueFd server = Connect(upstream());
  if (!server.valid()) return;
  // Tokens for the downstream direction, refilled every 10 ms.
  const int64_t per_tick = std::max<int64_t>(1, rate_ / 100);
  char buf[64 * 1024];
  auto tick = std::chrono::steady_clock::now();
  int64_t budget = per_tick;
  while (!stopping_.load()) {
    pollfd fds[2] = {{client.get(), POLLIN, 0}, {server.get(), POLLIN, 0}};
    if (poll(fds, 2, 50) < 0) return;
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(client.get(), buf, sizeof buf);
      if (n <= 0 || write(server.get(), buf, static_cast<size_t>(n)) != n) return;
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      auto now = std::chrono::steady_clock::now();
      if (now - tick >= std::chrono::milliseconds(10)) {
        tick = now;
        budget = per_tick;
      }
      if (budget <= 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10) - (now - tick));
        continue;
      }
      ssize_t n =
          read(server.get(), buf, static_cast<size_t>(std::min<int64_t>(budget, sizeof buf)));
      if (n <= 0) return;
      budget -= n;
      for (ssize_t done = 0; done < n;) {
        ssize_t w = write(client.get(), buf + done, static_cast<size_t>(n - done));
        if (w <= 0) return;
        done += w;
      }
    }
  }
}

}  // namespace warren::image::testing
