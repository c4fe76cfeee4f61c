// /proc socket tables and fd links, on lines recorded on this machine (a gloo job's loopback
// connections, an epoll fd's fdinfo).
#include "proc/sockets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace hangscan {
namespace {

TEST(Sockets, TcpLinesGiveBothAddressesStateAndInode) {
  const char* text =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout "
      "inode\n"
      "   2: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
      "514 1 "
      "00000000 100 0 0 10 0\n"
      " 170: 0100007F:A68E 0100007F:8E03 01 00000000:00000000 00:00000000 00000000     0        0 "
      "967579 1 "
      "00000000334ead3c 20 4 17 18 -1\n"
      " 171: torn";
  auto s = parse_proc_net_tcp(text, false);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].local, "0.0.0.0:2024");
  EXPECT_EQ(s[0].state, kTcpListen);
  EXPECT_EQ(s[1].local, "127.0.0.1:42638");
  EXPECT_EQ(s[1].remote, "127.0.0.1:36355");
  EXPECT_EQ(s[1].state, kTcpEstablished);
  EXPECT_EQ(s[1].inode, 967579u);
}

TEST(Sockets, Tcp6MappedAddressesAreWrittenAsIpv4) {
  const char* text =
      "  sl  local_address                         remote_address                        st "
      "tx_queue rx_queue tr "
      "tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0000000000000000FFFF00000100007F:7530 0000000000000000FFFF00000100007F:9C40 01 "
      "00000000:00000000 "
      "00:00000000 00000000     0        0 4242 1 0000000000000000 20 4 0 10 -1\n"
      "   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A "
      "00000000:00000000 "
      "00:00000000 00000000     0        0 4343 1 0000000000000000 100 0 0 10 0\n";
  auto s = parse_proc_net_tcp(text, true);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].local, "127.0.0.1:30000");
  EXPECT_EQ(s[0].remote, "127.0.0.1:40000");
  EXPECT_EQ(s[1].local, "[::1]:8080");
}

// The parser against the kernel: a real loopback connection is found with both ends swapped.
TEST(Sockets, ALiveConnectionIsInThisProcesssTable) {
  int l = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(l, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  int c = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  sockaddr_in mine{};
  len = sizeof mine;
  ::getsockname(c, reinterpret_cast<sockaddr*>(&mine), &len);
  std::ifstream f("/proc/self/net/tcp");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string me = fmt::format("127.0.0.1:{}", ntohs(mine.sin_port));
  std::string server = fmt::format("127.0.0.1:{}", ntohs(a.sin_port));
  int both = 0;
  for (const TcpSocket& s : parse_proc_net_tcp(text, false)) {
    if (s.local == me && s.remote == server) ++both;
    if (s.local == server && s.remote == me) ++both;
  }
  EXPECT_EQ(both, 2);
  ::close(c);
  ::close(l);
}

TEST(Sockets, UnixPeersComeFromSockDiag) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  auto inode = [](int fd) {
    char buf[64] = {};
    ssize_t n = ::readlink(fmt::format("/proc/self/fd/{}", fd).c_str(), buf, sizeof buf - 1);
    return classify_fd_link(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0)).inode;
  };
  auto table = read_unix_sockets();
  ASSERT_TRUE(table.count(inode(sv[0])));
  EXPECT_EQ(table[inode(sv[0])].peer, inode(sv[1]));
  EXPECT_EQ(table[inode(sv[1])].peer, inode(sv[0]));
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(Sockets, UnixNamesAndFdLinks) {
  auto names = parse_proc_net_unix(
      "Num       RefCount Protocol Flags    Type St Inode Path\n"
      "0000000000000000: 00000002 00000000 00010000 0001 01 12345 /run/a b.sock\n"
      "0000000000000000: 00000003 00000000 00000000 0001 03 12346\n");
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[12345], "/run/a b.sock");
  EXPECT_EQ(classify_fd_link("socket:[967577]").inode, 967577u);
  EXPECT_EQ(classify_fd_link("pipe:[958032]").kind, FdTarget::Kind::pipe);
  EXPECT_EQ(classify_fd_link("anon_inode:[eventpoll]").kind, FdTarget::Kind::anon);
  EXPECT_EQ(classify_fd_link("/dev/infiniband/uverbs0").kind, FdTarget::Kind::rdma);
  EXPECT_EQ(classify_fd_link("/dev/shm/nccl-x").kind, FdTarget::Kind::shm);
  EXPECT_EQ(classify_fd_link("socket:[x]").kind, FdTarget::Kind::file);
}

TEST(Sockets, EpollFdinfoListsRegisteredFds) {
  auto t = parse_epoll_fdinfo(
      "pos:\t0\nflags:\t02\nmnt_id:\t17\nino:\t1030\n"
      "tfd:       11 events:       19 data:          db939e0  pos:0 ino:ec3a9 sdev:9\n"
      "tfd:       10 events:       19 data:         11b5a220  pos:0 ino:ec399 sdev:9\n");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].fd, 11);
  EXPECT_EQ(t[0].events, 0x19u);
  EXPECT_EQ(t[0].inode, 0xec3a9u);
  EXPECT_EQ(parse_fdinfo_flags("pos:\t0\nflags:\t02000001\nmnt_id:\t14\n"), 02000001u);
}

}  // namespace
}  // namespace hangscan
