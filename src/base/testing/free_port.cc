#include "base/testing/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/check.h"
#include "base/unique_fd.h"

namespace warren::base::testing {

std::vector<uint16_t> FreeLoopbackPorts(int n) {
  std::vector<UniqueFd> held;
  std::vector<uint16_t> ports;
  for (int i = 0; i < n; ++i) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    CHECK(fd.valid());
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    socklen_t len = sizeof(addr);
    CHECK(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    ports.push_back(ntohs(addr.sin_port));
    held.push_back(std::move(fd));
  }
  return ports;
}

uint16_t FreeLoopbackPort() { return FreeLoopbackPorts(1).front(); }

}  // namespace warren::base::testing
