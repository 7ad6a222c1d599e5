#include "os/conntrack.h"

#include <fmt/format.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <sys/socket.h>

#include <cerrno>
#include <vector>

#include "base/unique_fd.h"
#include "os/netlink_message.h"

namespace warren::os {
namespace {

// The kernel's CTA_FILTER_F_CTA_IP_SRC (net/netfilter/nf_conntrack_netlink.c): the dump
// filter compares the original tuple's source address.
constexpr uint32_t kFilterIpSource = 1u << 0;

uint16_t CtMessage(uint8_t type) {
  return static_cast<uint16_t>((NFNL_SUBSYS_CTNETLINK << 8) | type);
}

void Header(NetlinkMessage& m) {
  auto* g = m.Fixed<nfgenmsg>();
  g->nfgen_family = AF_INET;
  g->version = NFNETLINK_V0;
  g->res_id = 0;
}

}  // namespace

Result<size_t> DeleteConntrackFrom(Ipv4 source) {
  base::UniqueFd fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER));
  if (!fd) return ErrnoError("netlink (netfilter) socket", errno);
  const std::string what = fmt::format("conntrack entries from {}", FormatIpv4(source));

  NetlinkMessage dump(CtMessage(IPCTNL_MSG_CT_GET), NLM_F_DUMP);
  Header(dump);
  size_t tuple = dump.Begin(CTA_TUPLE_ORIG);
  size_t ip = dump.Begin(CTA_TUPLE_IP);
  dump.AttrValue<uint32_t>(CTA_IP_V4_SRC, source.be);
  dump.End(ip);
  dump.End(tuple);
  // Parsed strictly by the kernel: the nested flag must be set.
  size_t filter = dump.Begin(CTA_FILTER | NLA_F_NESTED);
  dump.AttrValue<uint32_t>(CTA_FILTER_ORIG_FLAGS, kFilterIpSource);
  dump.AttrValue<uint32_t>(CTA_FILTER_REPLY_FLAGS, 0);
  dump.End(filter);
  // Each entry's original tuple, as the kernel wrote it: the delete names it back.
  std::vector<std::vector<uint8_t>> tuples;
  RETURN_IF_ERROR(NetlinkTransact(fd.get(), dump, 1, "list " + what, [&](const nlmsghdr* h) {
    if ((h->nlmsg_type & 0xff) != IPCTNL_MSG_CT_NEW) return;
    int len = static_cast<int>(h->nlmsg_len) - static_cast<int>(NLMSG_LENGTH(sizeof(nfgenmsg)));
    auto* a = reinterpret_cast<const rtattr*>(static_cast<const char*>(NLMSG_DATA(h)) +
                                              NLMSG_ALIGN(sizeof(nfgenmsg)));
    for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
      if ((a->rta_type & NLA_TYPE_MASK) == CTA_TUPLE_ORIG) {
        const auto* p = static_cast<const uint8_t*>(RTA_DATA(a));
        tuples.emplace_back(p, p + RTA_PAYLOAD(a));
      }
    }
  }));
  size_t deleted = 0;
  uint32_t seq = 1;
  for (const auto& t : tuples) {
    NetlinkMessage del(CtMessage(IPCTNL_MSG_CT_DELETE), 0);
    Header(del);
    del.Attr(CTA_TUPLE_ORIG, t.data(), t.size());
    Status st = NetlinkTransact(fd.get(), del, ++seq, "delete one of " + what);
    // Gone meanwhile (timed out, or its connection closed): what we wanted.
    if (st.ok()) {
      ++deleted;
    } else if (st.code() != StatusCode::kNotFound) {
      return st;
    }
  }
  return deleted;
}

}  // namespace warren::os
