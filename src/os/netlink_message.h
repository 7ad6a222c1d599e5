#pragma once

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace warren::os {

// A netlink message under construction: header, fixed part, then attributes, each padded to
// 4 bytes; nested attributes are opened and closed around their content.
class NetlinkMessage {
 public:
  NetlinkMessage(uint16_t type, uint16_t flags) {
    buf_.resize(NLMSG_HDRLEN);
    auto* h = header();
    h->nlmsg_type = type;
    h->nlmsg_flags = static_cast<uint16_t>(flags | NLM_F_REQUEST | NLM_F_ACK);
  }
  template <typename T>
  T* Fixed() {
    size_t at = buf_.size();
    buf_.resize(at + NLMSG_ALIGN(sizeof(T)), 0);
    return reinterpret_cast<T*>(buf_.data() + at);
  }
  void Attr(uint16_t type, const void* data, size_t len) {
    size_t at = buf_.size();
    buf_.resize(at + RTA_ALIGN(RTA_LENGTH(len)), 0);
    auto* a = reinterpret_cast<rtattr*>(buf_.data() + at);
    a->rta_type = type;
    a->rta_len = static_cast<uint16_t>(RTA_LENGTH(len));
    if (len > 0) memcpy(RTA_DATA(a), data, len);
  }
  void Attr(uint16_t type, std::string_view s) {
    std::string z(s);
    Attr(type, z.c_str(), z.size() + 1);
  }
  template <typename T>
  void AttrValue(uint16_t type, T value) {
    Attr(type, &value, sizeof value);
  }
  size_t Begin(uint16_t type) {
    size_t at = buf_.size();
    Attr(type, nullptr, 0);
    return at;
  }
  void End(size_t at) {
    reinterpret_cast<rtattr*>(buf_.data() + at)->rta_len = static_cast<uint16_t>(buf_.size() - at);
  }
  nlmsghdr* Finish(uint32_t seq) {
    header()->nlmsg_len = static_cast<uint32_t>(buf_.size());
    header()->nlmsg_seq = seq;
    return header();
  }
  size_t size() const { return buf_.size(); }

 private:
  nlmsghdr* header() { return reinterpret_cast<nlmsghdr*>(buf_.data()); }
  std::vector<uint8_t> buf_;
};

// Sends `msg` on `fd` and reads until the kernel acknowledges it (NLM_F_ACK) or answers
// NLMSG_DONE; each other answer of the same sequence number goes to `on_message` when given.
// The kernel's error comes back as ErrnoError naming `what`.
Status NetlinkTransact(int fd, NetlinkMessage& msg, uint32_t seq, std::string_view what,
                       const std::function<void(const nlmsghdr*)>& on_message = nullptr);

}  // namespace warren::os
