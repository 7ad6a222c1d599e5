#include "os/netlink_message.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <cerrno>

namespace warren::os {

Status NetlinkTransact(int fd, NetlinkMessage& msg, uint32_t seq, std::string_view what,
                       const std::function<void(const nlmsghdr*)>& on_message) {
  nlmsghdr* req = msg.Finish(seq);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  ssize_t sent;
  do {
    sent = sendto(fd, req, msg.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return ErrnoError(fmt::format("netlink: {}", what), errno);
  alignas(nlmsghdr) char buf[32768];
  for (;;) {
    ssize_t n;
    do {
      n = recv(fd, buf, sizeof buf, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return ErrnoError(fmt::format("netlink: {}: read the answer", what), errno);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, static_cast<unsigned>(n));
         h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_seq != seq) continue;
      if (h->nlmsg_type == NLMSG_ERROR) {
        const int err = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        if (err == 0) return Status::Ok();
        return ErrnoError(fmt::format("netlink: {}", what), err);
      }
      if (h->nlmsg_type == NLMSG_DONE) return Status::Ok();
      if (on_message) on_message(h);
    }
  }
}

}  // namespace warren::os
