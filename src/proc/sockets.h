// The node's sockets as /proc and the kernel's socket diagnostics show them.
//
// Why: a rank blocked in recv() waits on whoever holds the other end of its socket. The fd
// names a socket inode (/proc/PID/fd/N -> "socket:[INODE]"); /proc/PID/net/tcp and tcp6 give a
// TCP socket's local and remote address, so the other end is the socket with the two swapped;
// /proc/net/unix has no peer, but netlink sock_diag (UNIX_DIAG_PEER) names the peer's inode.
// Parsers take text so they are tested on recorded files; readers treat what they cannot read
// as unknown.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hangscan {

// One line of /proc/PID/net/tcp or tcp6. Addresses are "10.0.0.1:29500" or "[fe80::1]:29500";
// an IPv4-mapped IPv6 address is written as IPv4, so both ends of a connection spell it alike.
struct TcpSocket {
  std::string local;
  std::string remote;
  int state = 0;  // 1 ESTABLISHED, 10 LISTEN (include/net/tcp_states.h)
  std::uint64_t inode = 0;
};
inline constexpr int kTcpEstablished = 1;
inline constexpr int kTcpListen = 10;
std::vector<TcpSocket> parse_proc_net_tcp(std::string_view text, bool v6);

// /proc/PID/net/unix: inode -> bound path ("@name" for the abstract namespace); unbound
// sockets are left out.
std::map<std::uint64_t, std::string> parse_proc_net_unix(std::string_view text);

// A unix socket as sock_diag describes it: its peer's inode (0: none) and bound path.
struct UnixSocket {
  std::uint64_t peer = 0;
  std::string path;
};
// inode -> socket for every unix socket of hangscan's network namespace, from netlink
// sock_diag; empty when the kernel refuses (no CONFIG_UNIX_DIAG) or answers nothing in time.
std::map<std::uint64_t, UnixSocket> read_unix_sockets();
// The parser of sock_diag's answer (a run of netlink messages), for tests.
void parse_unix_diag(const unsigned char* data, std::size_t size,
                     std::map<std::uint64_t, UnixSocket>& out);

// What a file descriptor is, from its /proc/PID/fd link: "socket:[12]", "pipe:[13]",
// "anon_inode:[eventpoll]", "/dev/infiniband/uverbs0", "/dev/shm/x", "/path".
struct FdTarget {
  enum class Kind { socket, pipe, anon, rdma, shm, file };
  Kind kind = Kind::file;
  std::uint64_t inode = 0;  // socket and pipe
  std::string text;         // the link as read
};
FdTarget classify_fd_link(std::string_view link);

// /proc/PID/fdinfo of an epoll fd: the "tfd:" lines' registered fd numbers and inodes.
struct EpollTarget {
  int fd = 0;
  std::uint32_t events = 0;
  std::uint64_t inode = 0;
};
std::vector<EpollTarget> parse_epoll_fdinfo(std::string_view text);

// The "flags:" octal field of /proc/PID/fdinfo/N; nullopt when absent.
std::optional<unsigned> parse_fdinfo_flags(std::string_view text);

}  // namespace hangscan
