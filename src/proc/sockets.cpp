#include "proc/sockets.h"

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

#include "proc/proc_files.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

// "0100007F:A68E" (v4) or 32 hex digits + ":PORT" (v6), each 32-bit word in the kernel's byte
// order, which is this machine's: /proc describes the node it is read on.
std::optional<std::string> tcp_address(std::string_view text, bool v6) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto port = parse_int<std::uint16_t>(text.substr(colon + 1), 16);
  std::string_view hex = text.substr(0, colon);
  if (!port || hex.size() != (v6 ? 32u : 8u)) return std::nullopt;
  std::uint32_t words[4] = {};
  for (std::size_t w = 0; w < hex.size() / 8; ++w) {
    auto v = parse_int<std::uint32_t>(hex.substr(w * 8, 8), 16);
    if (!v) return std::nullopt;
    words[w] = *v;
  }
  char buf[INET6_ADDRSTRLEN] = {};
  if (!v6) {
    in_addr a{};
    a.s_addr = words[0];
    inet_ntop(AF_INET, &a, buf, sizeof buf);
    return fmt::format("{}:{}", buf, *port);
  }
  in6_addr a{};
  std::memcpy(&a, words, sizeof a);
  if (IN6_IS_ADDR_V4MAPPED(&a)) {
    in_addr v4{};
    std::memcpy(&v4, &a.s6_addr[12], 4);
    inet_ntop(AF_INET, &v4, buf, sizeof buf);
    return fmt::format("{}:{}", buf, *port);
  }
  inet_ntop(AF_INET6, &a, buf, sizeof buf);
  return fmt::format("[{}]:{}", buf, *port);
}

// The number inside "socket:[12]" / "pipe:[12]".
std::uint64_t bracket_inode(std::string_view link, std::string_view prefix) {
  if (link.substr(0, prefix.size()) != prefix || link.back() != ']') return 0;
  return parse_int<std::uint64_t>(link.substr(prefix.size(), link.size() - prefix.size() - 1))
      .value_or(0);
}

}  // namespace

std::vector<TcpSocket> parse_proc_net_tcp(std::string_view text, bool v6) {
  std::vector<TcpSocket> out;
  for_each_line(text, [&](std::string_view line) {
    auto f = split_fields(line);
    if (f.size() < 10 || f[0].empty() || f[0].back() != ':') return;  // the header, a torn line
    auto local = tcp_address(f[1], v6);
    auto remote = tcp_address(f[2], v6);
    auto state = parse_int<int>(f[3], 16);
    auto inode = parse_int<std::uint64_t>(f[9]);
    if (!local || !remote || !state || !inode) return;
    out.push_back({std::move(*local), std::move(*remote), *state, *inode});
  });
  return out;
}

std::map<std::uint64_t, std::string> parse_proc_net_unix(std::string_view text) {
  std::map<std::uint64_t, std::string> out;
  for_each_line(text, [&](std::string_view line) {
    auto f = split_fields(line);
    if (f.size() < 8 || f[0].empty() || f[0].back() != ':') return;
    auto inode = parse_int<std::uint64_t>(f[6]);
    if (!inode) return;
    // The path is the rest of the line (it may hold spaces).
    std::size_t at = static_cast<std::size_t>(f[7].data() - line.data());
    out[*inode] = std::string(line.substr(at));
  });
  return out;
}

void parse_unix_diag(const unsigned char* data, std::size_t size,
                     std::map<std::uint64_t, UnixSocket>& out) {
  auto len = static_cast<int>(size);
  for (auto* h = reinterpret_cast<const nlmsghdr*>(data); NLMSG_OK(h, len);
       h = NLMSG_NEXT(h, len)) {
    if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(unix_diag_msg)))
      continue;
    unix_diag_msg msg{};
    std::memcpy(&msg, NLMSG_DATA(h), sizeof msg);
    UnixSocket s;
    auto attr_len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof(unix_diag_msg)));
    auto* a = reinterpret_cast<const rtattr*>(static_cast<const unsigned char*>(NLMSG_DATA(h)) +
                                              NLMSG_ALIGN(sizeof(unix_diag_msg)));
    for (; RTA_OK(a, attr_len); a = RTA_NEXT(a, attr_len)) {
      const char* payload = static_cast<const char*>(RTA_DATA(a));
      std::size_t n = RTA_PAYLOAD(a);
      if (a->rta_type == UNIX_DIAG_PEER && n >= sizeof(std::uint32_t)) {
        std::uint32_t peer = 0;
        std::memcpy(&peer, payload, sizeof peer);
        s.peer = peer;
      } else if (a->rta_type == UNIX_DIAG_NAME && n > 0) {
        s.path = payload[0] == '\0' ? "@" + std::string(payload + 1, n - 1)
                                    : std::string(payload, strnlen(payload, n));
      }
    }
    out[msg.udiag_ino] = std::move(s);
  }
}

std::map<std::uint64_t, UnixSocket> read_unix_sockets() {
  std::map<std::uint64_t, UnixSocket> out;
  int fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) return out;
  timeval tv{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct {
    nlmsghdr nlh;
    unix_diag_req req;
  } request{};
  request.nlh.nlmsg_len = sizeof request;
  request.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  request.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.req.sdiag_family = AF_UNIX;
  request.req.udiag_states = ~0u;
  request.req.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_PEER;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd, &request, sizeof request, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) < 0) {
    ::close(fd);
    return out;
  }
  std::vector<unsigned char> buf(1 << 16);
  // At most 4096 reads of 64 KiB (about a million sockets): the answer ends with NLMSG_DONE.
  for (int reads = 0; reads < 4096; ++reads) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    bool done = false;
    auto len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<const nlmsghdr*>(buf.data()); NLMSG_OK(h, len);
         h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) done = true;
    }
    parse_unix_diag(buf.data(), static_cast<std::size_t>(n), out);
    if (done) break;
  }
  ::close(fd);
  return out;
}

FdTarget classify_fd_link(std::string_view link) {
  FdTarget t;
  t.text = std::string(link);
  if (link.empty()) return t;
  if (auto i = bracket_inode(link, "socket:["); i != 0) {
    t.kind = FdTarget::Kind::socket;
    t.inode = i;
  } else if (auto p = bracket_inode(link, "pipe:["); p != 0) {
    t.kind = FdTarget::Kind::pipe;
    t.inode = p;
  } else if (link.substr(0, 11) == "anon_inode:") {
    t.kind = FdTarget::Kind::anon;
  } else if (link.substr(0, 16) == "/dev/infiniband/") {
    t.kind = FdTarget::Kind::rdma;
  } else if (link.substr(0, 9) == "/dev/shm/" || link.substr(0, 7) == "/memfd:") {
    t.kind = FdTarget::Kind::shm;
  }
  return t;
}

std::vector<EpollTarget> parse_epoll_fdinfo(std::string_view text) {
  std::vector<EpollTarget> out;
  for_each_line(text, [&](std::string_view line) {
    auto f = split_fields(line);
    // "tfd:  5 events:  19 data: 7f00 pos:0 ino:ec3a9 sdev:9"
    if (f.size() < 4 || f[0] != "tfd:" || f[2] != "events:") return;
    EpollTarget t;
    auto fd = parse_int<int>(f[1]);
    auto ev = parse_int<std::uint32_t>(f[3], 16);
    if (!fd || !ev) return;
    t.fd = *fd;
    t.events = *ev;
    for (std::string_view x : f) {
      if (x.substr(0, 4) == "ino:") t.inode = parse_int<std::uint64_t>(x.substr(4), 16).value_or(0);
    }
    out.push_back(t);
  });
  return out;
}

std::optional<unsigned> parse_fdinfo_flags(std::string_view text) {
  std::optional<unsigned> flags;
  for_each_line(text, [&](std::string_view line) {
    auto f = split_fields(line);
    if (f.size() == 2 && f[0] == "flags:") flags = parse_int<unsigned>(f[1], 8);
  });
  return flags;
}

}  // namespace hangscan
