#include "proc/socket_waits.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "proc/node_fds.h"
#include "proc/proc_files.h"
#include "proc/sockets.h"

namespace hangscan {

namespace {

constexpr std::size_t kMaxFdsPerWait = 4096;  // poll/select sets read at most
constexpr std::size_t kMaxEdgesPerThread = 64;
constexpr std::size_t kMaxConnections = 4096;  // tcp_connections per process

bool read_memory(int pid, std::uint64_t addr, void* out, std::size_t size) {
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(addr), size};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

// The node's fd tables and socket tables, read once and only as far as needed.
class NodeView {
 public:
  NodeView(const JobSnapshot& job, NodeFdScan* scan) : scan_(scan) {
    for (const ProcessSnapshot& p : job.processes) {
      if (p.death || p.threads.empty() || p.core) continue;
      job_pids_.insert(p.pid);
      scan_fd_table(p.pid, fds_, &links_[p.pid]);
    }
  }

  // Processes holding `link` ("socket:[12]"): the job's first, then the whole node's (always
  // the whole node's when `whole_node`: a claim that nobody else holds it needs every table).
  // The whole node's come from the run's scan when it made one (node_fds.h), else are read now.
  const std::vector<FdHolder>& holders(const std::string& link, bool whole_node = false) {
    auto it = fds_.holders.find(link);
    if ((it != fds_.holders.end() && !whole_node) || node_scanned_)
      return it != fds_.holders.end() ? it->second : none_;
    node_scanned_ = true;
    if (const NodeFds* node = scan_ != nullptr ? scan_->take() : nullptr) {
      add_others(*node);
    } else {
      for (int pid : list_pids()) {
        if (!job_pids_.count(pid)) scan_fd_table(pid, fds_);
      }
    }
    it = fds_.holders.find(link);
    return it != fds_.holders.end() ? it->second : none_;
  }

  const std::map<int, std::string>& fds_of(int pid) { return links_[pid]; }

  // Why a claim that nobody else holds an end is not proven: some process's fd table could not
  // be read (another user namespace's init refuses even root) or the scan hit its limit.
  // Empty when every table was read.
  std::string unseen_besides(int waiter) const {
    std::size_t n = fds_.unreadable.size() - fds_.unreadable.count(waiter);
    std::string why;
    if (n > 0)
      why = fmt::format("; the fds of {} other process{} could not be read", n, n == 1 ? "" : "es");
    if (fds_.scanned >= NodeFds::kMaxFds || limited_)
      why += fmt::format("; the scan stopped at {} fds", NodeFds::kMaxFds);
    return why;
  }

  // TCP sockets of `pid`'s network namespace (tcp and tcp6), by inode.
  const std::map<std::uint64_t, TcpSocket>& tcp(int pid) {
    std::string ns = read_link(fmt::format("/proc/{}/ns/net", pid)).value_or("?");
    auto [it, fresh] = tcp_.try_emplace(ns);
    if (fresh) {
      for (bool v6 : {false, true}) {
        auto text =
            read_text_file(fmt::format("/proc/{}/net/{}", pid, v6 ? "tcp6" : "tcp"), 256u << 20);
        if (!text) continue;
        for (TcpSocket& s : parse_proc_net_tcp(*text, v6))
          it->second.emplace(s.inode, std::move(s));
      }
    }
    return it->second;
  }

  const std::map<std::uint64_t, UnixSocket>& unix_sockets() {
    if (!unix_read_) {
      unix_ = read_unix_sockets();
      unix_read_ = true;
    }
    return unix_;
  }

 private:
  // The processes of the node scan that are not the job's (the job's were read above).
  void add_others(const NodeFds& node) {
    for (const auto& [link, holders] : node.holders) {
      for (const FdHolder& h : holders) {
        if (!job_pids_.count(h.pid)) fds_.holders[link].push_back(h);
      }
    }
    for (int pid : node.unreadable) {
      if (!job_pids_.count(pid)) fds_.unreadable.insert(pid);
    }
    limited_ = node.scanned >= NodeFds::kMaxFds;
  }

  NodeFdScan* scan_;
  std::set<int> job_pids_;
  NodeFds fds_;  // the job's processes, then (node_scanned_) every other one
  std::map<int, std::map<int, std::string>> links_;
  std::map<std::string, std::map<std::uint64_t, TcpSocket>> tcp_;
  std::map<std::uint64_t, UnixSocket> unix_;
  std::vector<FdHolder> none_;
  bool unix_read_ = false;
  bool node_scanned_ = false;
  bool limited_ = false;  // the node scan stopped at its limit
};

const std::set<std::string>& single_fd_calls() {
  static const std::set<std::string> calls = {
      "read",   "readv",  "pread64", "recvfrom", "recvmsg", "recvmmsg", "write",
      "writev", "sendto", "sendmsg", "accept",   "accept4", "connect"};
  return calls;
}

bool writes(const std::string& call) {
  return call == "write" || call == "writev" || call == "sendto" || call == "sendmsg";
}

// The fds a thread's blocking call waits on; empty when it is not such a call.
std::vector<int> awaited_fds(int pid, const ThreadSnapshot& t) {
  std::vector<int> fds;
  if (!t.syscall || t.syscall_args.size() != 6) return fds;
  const std::string& call = *t.syscall;
  const auto& a = t.syscall_args;
  if (single_fd_calls().count(call)) {
    if (a[0] <= static_cast<std::uint64_t>(INT_MAX)) fds.push_back(static_cast<int>(a[0]));
  } else if (call == "poll" || call == "ppoll") {
    std::size_t n = std::min<std::uint64_t>(a[1], kMaxFdsPerWait);
    std::vector<pollfd> set(n);
    if (n && read_memory(pid, a[0], set.data(), n * sizeof(pollfd))) {
      for (const pollfd& p : set) {
        if (p.fd >= 0) fds.push_back(p.fd);
      }
    }
  } else if (call == "select" || call == "pselect6") {
    std::size_t n = std::min<std::uint64_t>(a[0], kMaxFdsPerWait);
    std::vector<std::uint64_t> bits((n + 63) / 64);
    for (std::uint64_t set : {a[1], a[2]}) {
      if (set == 0 || bits.empty() || !read_memory(pid, set, bits.data(), bits.size() * 8))
        continue;
      for (std::size_t fd = 0; fd < n; ++fd) {
        if (bits[fd / 64] >> (fd % 64) & 1) fds.push_back(static_cast<int>(fd));
      }
    }
  } else if (call == "epoll_wait" || call == "epoll_pwait" || call == "epoll_pwait2") {
    auto text = read_text_file(fmt::format("/proc/{}/fdinfo/{}", pid, a[0]), 1 << 20);
    if (text) {
      for (const EpollTarget& e : parse_epoll_fdinfo(*text)) {
        if (fds.size() < kMaxFdsPerWait) fds.push_back(e.fd);
      }
    }
  }
  std::sort(fds.begin(), fds.end());
  fds.erase(std::unique(fds.begin(), fds.end()), fds.end());
  return fds;
}

// Whether `pid`'s `fd` is the end of a pipe that a thread waiting the `writing` way does not
// use: the read end of a writer, the write end of a reader (or both: O_RDWR).
bool other_end(int pid, int fd, bool writing) {
  auto info = read_text_file(fmt::format("/proc/{}/fdinfo/{}", pid, fd), 4096);
  auto flags = info ? parse_fdinfo_flags(*info) : std::nullopt;
  if (!flags) return false;
  unsigned mode = *flags & O_ACCMODE;
  return mode == O_RDWR || mode == (writing ? O_RDONLY : O_WRONLY);
}

}  // namespace

bool waits_on_own_pipe(int pid, const std::vector<const ThreadSnapshot*>& threads) {
  constexpr std::size_t kMaxLooks = 256;       // fds looked at; beyond: "may", which only costs
  std::map<std::string, std::set<int>> pipes;  // awaited pipe -> the fds awaited on it
  std::set<int> seen;
  for (const ThreadSnapshot* t : threads) {
    for (int fd : awaited_fds(pid, *t)) {
      if (!seen.insert(fd).second) continue;
      if (seen.size() > kMaxLooks) return true;
      auto link = read_link(fmt::format("/proc/{}/fd/{}", pid, fd));
      if (link && classify_fd_link(*link).kind == FdTarget::Kind::pipe) pipes[*link].insert(fd);
    }
  }
  if (pipes.empty()) return false;
  // Another fd of the process on an awaited pipe: most likely its other end (a dup of the same
  // end only starts the scan for nothing; no fdinfo is read here).
  NodeFds own;
  scan_fd_table(pid, own);
  for (const auto& [link, awaited] : pipes) {
    auto it = own.holders.find(link);
    if (it == own.holders.end()) continue;
    for (const FdHolder& h : it->second) {
      if (!awaited.count(h.fd)) return true;
    }
  }
  return false;
}

namespace {

class WaitResolver {
 public:
  WaitResolver(JobSnapshot& job, std::string host, NodeFdScan* scan)
      : job_(job), host_(std::move(host)), node_(job, scan) {}

  void run() {
    for (ProcessSnapshot& p : job_.processes) {
      if (p.death || p.threads.empty() || p.core) continue;
      connections(p);
      awaited_.clear();
      for (const ThreadSnapshot& t : p.threads) awaited_[t.tid] = awaited_fds(p.pid, t);
      for (ThreadSnapshot& t : p.threads) {
        const std::vector<int>& fds = awaited_[t.tid];
        if (!fds.empty()) t.waits_on = edges(p.pid, fds, writes(*t.syscall));
      }
    }
    for (ProcessSnapshot& p : job_.processes) {
      for (ThreadSnapshot& t : p.threads) {
        for (WaitEdge& e : t.waits_on) e.rank = rank_of(e);
      }
    }
  }

 private:
  std::optional<int> rank_of(const WaitEdge& e) const {
    if (!e.pid || e.host != host_) return std::nullopt;
    for (const ProcessSnapshot& p : job_.processes) {
      if (p.pid == *e.pid && p.host == host_) return p.rank;
    }
    return std::nullopt;
  }

  // The process's established TCP connections. The namespace's TCP table is read at its first
  // socket only: a read walks every bucket of the kernel's connection hash (about 1 ms each
  // of tcp and tcp6 on a 24 GiB machine), for nothing in a process without sockets.
  void connections(ProcessSnapshot& p) {
    const std::map<std::uint64_t, TcpSocket>* table = nullptr;
    for (const auto& [fd, link] : node_.fds_of(p.pid)) {
      FdTarget f = classify_fd_link(link);
      if (f.kind != FdTarget::Kind::socket) continue;
      if (table == nullptr) table = &node_.tcp(p.pid);
      auto it = table->find(f.inode);
      if (it == table->end() || it->second.state != kTcpEstablished) continue;
      if (p.tcp_connections.size() >= kMaxConnections) break;
      p.tcp_connections.push_back(it->second.local + " -> " + it->second.remote);
    }
  }

  // One edge per process holding `link` other than `self`. When only `self` holds it (a
  // server thread of the same process, as torch's TCPStore on rank 0), one edge to `self`, to
  // the thread that waits on it when exactly one does. Nobody: one edge without a pid.
  void to_holders(std::vector<WaitEdge>& out, const std::string& link, int self,
                  const std::string& via) {
    std::set<int> pids, own_fds;
    for (const FdHolder& h : node_.holders(link)) {
      if (h.pid != self) pids.insert(h.pid);
      if (h.pid == self) own_fds.insert(h.fd);
    }
    for (int pid : pids) out.push_back({host_, pid, std::nullopt, via});
    if (!pids.empty()) return;
    if (own_fds.empty()) {
      out.push_back({"", std::nullopt, std::nullopt, via});
      return;
    }
    std::set<int> serving;  // threads of `self` waiting on its end
    for (const auto& [tid, fds] : awaited_) {
      for (int fd : fds) {
        if (own_fds.count(fd)) serving.insert(tid);
      }
    }
    std::optional<int> tid;
    if (serving.size() == 1) tid = *serving.begin();
    out.push_back({host_, self, std::nullopt, via, tid});
  }

  void socket_edge(std::vector<WaitEdge>& out, std::vector<WaitEdge>& listening, int pid,
                   const FdTarget& f) {
    const auto& table = node_.tcp(pid);
    if (auto it = table.find(f.inode); it != table.end()) {
      const TcpSocket& s = it->second;
      if (s.state == kTcpListen) {
        listening.push_back({"", std::nullopt, std::nullopt, "tcp listening on " + s.local});
        return;
      }
      std::string via = fmt::format("tcp {} -> {}", s.local, s.remote);
      auto peer = std::find_if(table.begin(), table.end(), [&](const auto& kv) {
        return kv.second.local == s.remote && kv.second.remote == s.local;
      });
      if (peer == table.end()) {
        out.push_back({"", std::nullopt, std::nullopt, via});  // another node: the front end looks
        return;
      }
      to_holders(out, fmt::format("socket:[{}]", peer->first), pid, via);
      return;
    }
    const auto& unix_table = node_.unix_sockets();
    auto u = unix_table.find(f.inode);
    if (u == unix_table.end()) {
      out.push_back({"", std::nullopt, std::nullopt, f.text + " (not TCP or unix: not followed)"});
      return;
    }
    std::string named = u->second.path.empty() ? "" : " (" + u->second.path + ")";
    if (u->second.peer == 0) {
      listening.push_back(
          {"", std::nullopt, std::nullopt, fmt::format("unix {}{} listening", f.inode, named)});
      return;
    }
    auto peer = unix_table.find(u->second.peer);
    if (named.empty() && peer != unix_table.end() && !peer->second.path.empty())
      named = " (" + peer->second.path + ")";
    to_holders(out, fmt::format("socket:[{}]", u->second.peer), pid,
               fmt::format("unix {} -> {}{}", f.inode, u->second.peer, named));
  }

  // Which of `holders` hold the end of a pipe the waiter `pid` does not use: itself (`self`) or
  // other processes.
  static void other_ends(const std::vector<FdHolder>& holders, int pid, bool writing,
                         std::set<int>& others, bool& self) {
    for (const FdHolder& h : holders) {
      if (!other_end(h.pid, h.fd, writing)) continue;
      if (h.pid == pid) {
        self = true;
      } else {
        others.insert(h.pid);
      }
    }
  }

  // A pipe waits on the process holding its other end (the write end when the thread reads);
  // several such processes are said as a count, not guessed between.
  // The job's processes are looked at first; the rest of the node only when none of them but
  // the waiter holds the other end (a claim that nobody else does needs every fd table).
  // Threads waiting on the same pipe the same way share one answer (computed once: its holders'
  // fdinfo is read once, not once per thread).
  void pipe_edge(std::vector<WaitEdge>& out, int pid, const FdTarget& f, bool writing) {
    auto key = std::make_tuple(f.text, pid, writing);
    auto known = pipe_edges_.find(key);
    if (known == pipe_edges_.end()) {
      std::vector<WaitEdge> edge;
      new_pipe_edge(edge, pid, f, writing);
      known = pipe_edges_.emplace(std::move(key), std::move(edge)).first;
    }
    out.insert(out.end(), known->second.begin(), known->second.end());
  }

  void new_pipe_edge(std::vector<WaitEdge>& out, int pid, const FdTarget& f, bool writing) {
    std::set<int> others;
    bool self = false;  // the waiter holds the other end itself
    other_ends(node_.holders(f.text), pid, writing, others, self);
    if (others.empty()) other_ends(node_.holders(f.text, true), pid, writing, others, self);
    const char* end = writing ? "read" : "write";
    if (others.size() == 1) {
      out.push_back({host_, *others.begin(), std::nullopt, f.text});
    } else if (others.empty() && self) {
      // Nobody else can ever end this wait: the waiter must close or use its own other end.
      out.push_back({"", std::nullopt, std::nullopt,
                     fmt::format("{} (only this process holds its {} end{})", f.text, end,
                                 node_.unseen_besides(pid))});
    } else if (others.empty()) {
      out.push_back({"", std::nullopt, std::nullopt,
                     fmt::format("{} (no other process holds its {} end{})", f.text, end,
                                 node_.unseen_besides(pid))});
    } else {
      out.push_back({"", std::nullopt, std::nullopt,
                     fmt::format("{} ({} processes hold its {} end)", f.text, others.size(), end)});
    }
  }

  std::vector<WaitEdge> edges(int pid, const std::vector<int>& fds, bool writing) {
    std::vector<WaitEdge> out, listening;
    const auto& table = node_.fds_of(pid);
    for (int fd : fds) {
      if (out.size() >= kMaxEdgesPerThread) break;
      auto it = table.find(fd);
      if (it == table.end()) continue;
      FdTarget f = classify_fd_link(it->second);
      switch (f.kind) {
        case FdTarget::Kind::socket:
          socket_edge(out, listening, pid, f);
          break;
        case FdTarget::Kind::pipe:
          pipe_edge(out, pid, f, writing);
          break;
        case FdTarget::Kind::rdma:
          out.push_back({"", {}, {}, "RDMA device " + f.text + " (not followed)"});
          break;
        case FdTarget::Kind::shm:
          out.push_back({"", {}, {}, "shared memory " + f.text + " (not followed)"});
          break;
        case FdTarget::Kind::anon:
        case FdTarget::Kind::file:
          out.push_back({"", {}, {}, f.text});
          break;
      }
    }
    // A server loop (a set with a listening socket) waits on any client, not on one of them.
    if (!listening.empty()) return listening;
    return out;
  }

  JobSnapshot& job_;
  std::string host_;
  NodeView node_;
  std::map<int, std::vector<int>> awaited_;  // tid -> fds, of the process being resolved
  std::map<std::tuple<std::string, int, bool>, std::vector<WaitEdge>> pipe_edges_;
};

}  // namespace

void resolve_socket_waits(JobSnapshot& job, const std::string& host, NodeFdScan* scan) {
  std::string h = host;
  if (h.empty()) {
    for (const ProcessSnapshot& p : job.processes) {
      if (!p.host.empty()) {
        h = p.host;
        break;
      }
    }
  }
  WaitResolver(job, h, scan).run();
}

}  // namespace hangscan
