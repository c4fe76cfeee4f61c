#include "capture/bpf_fd_holders.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "capture/bpf_snapshot.h"
#include "fd_holders_events.h"
#include "util/hints.h"

#ifdef HANGSCAN_HAVE_BPF
#include <bpf/bpf.h>
#include <unistd.h>

#include "capture/fd_holders_lskel.h"
#endif

namespace hangscan {

static_assert(HS_FD_MAX_FDS == NodeFds::kMaxFds, "the iterator stops where the /proc scan does");

NodeFdScanner node_fd_scanner(bool bpf_allowed) {
  if (!bpf_allowed) return scan_node_fds;
  return [](const std::atomic<bool>* cancel) {
    auto fds_on_node = count_node_fds(kBpfFdScanFrom);
    if (fds_on_node && *fds_on_node < kBpfFdScanFrom) return scan_node_fds(cancel);
    if (auto fds = scan_node_fds_bpf(cancel)) return std::move(*fds);
    return scan_node_fds(cancel);
  };
}

namespace {

// Why the BPF scan is off; the caller scans /proc instead.
Error fd_scan_error(Errc code, const std::string& what, int err = 0) {
  std::string why = err != 0 ? fmt::format("{}: {}", what, std::strerror(err)) : what;
  return Error(code, "BPF fd scan: " + why, err, hints::quiet_dump_off());
}

}  // namespace

#ifndef HANGSCAN_HAVE_BPF

Result<NodeFds> scan_node_fds_bpf(const std::atomic<bool>*) {
  return fd_scan_error(Errc::unsupported, "this hangscan was built without eBPF support");
}

#else

namespace {

// The loaded program; closed (every fd of it) when this goes.
struct LoadedFdHolders {
  explicit LoadedFdHolders(fd_holders* s) : skel(s) {}
  ~LoadedFdHolders() { hs_fd_holders_destroy(skel); }
  LoadedFdHolders(const LoadedFdHolders&) = delete;
  LoadedFdHolders& operator=(const LoadedFdHolders&) = delete;
  fd_holders* skel;
};

// One pass of the iterator over every task of the node: its records, as written.
Result<std::vector<std::uint8_t> > run_pass(LoadedFdHolders& loaded) {
  *hs_fd_holders_seen(loaded.skel) = 0;
  *hs_fd_holders_last_tgid(loaded.skel) = 0;
  int link = bpf_link_create(hs_fd_holders_prog_fd(loaded.skel), 0, BPF_TRACE_ITER, nullptr);
  if (link < 0)
    return fd_scan_error(Errc::permission, "cannot attach the task_file iterator", errno);
  int fd = bpf_iter_create(link);
  int err = fd < 0 ? errno : 0;
  constexpr std::size_t kChunk = 64 * 1024;
  std::vector<std::uint8_t> out;
  for (std::size_t used = 0; fd >= 0;) {  // read to the end, straight into `out`
    out.resize(used + kChunk);
    ssize_t n = ::read(fd, out.data() + used, kChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : 0;
      out.resize(used);
      ::close(fd);
      break;
    }
    used += static_cast<std::size_t>(n);
  }
  ::close(link);
  if (err != 0) return fd_scan_error(Errc::permission, "running the task_file iterator", err);
  return out;
}

// The records as the /proc scan's holders: by link, each sorted by pid and fd (the order of
// /proc's directories), an fd seen twice (a thread with a table of its own) once. The
// processes of /proc whose table the iterator did not visit (one with no fd; one the kernel
// kept from it) are read through /proc, so what neither could read counts as unreadable.
Result<NodeFds> holders_of(const std::vector<std::uint8_t>& out, std::uint64_t seen,
                           const std::atomic<bool>* cancel) {
  if (out.size() % sizeof(hs_fd_holder) != 0)
    return fd_scan_error(Errc::bad_data, "a record is cut short");
  NodeFds fds;
  std::set<int> tables;
  for (std::size_t at = 0; at < out.size(); at += sizeof(hs_fd_holder)) {
    hs_fd_holder r{};
    std::memcpy(&r, out.data() + at, sizeof(r));
    if (r.kind == HS_FD_TABLE) {
      tables.insert(static_cast<int>(r.tgid));
      continue;
    }
    const char* kind = r.kind == HS_FD_PIPE ? "pipe" : "socket";
    fds.holders[fmt::format("{}:[{}]", kind, r.ino)].push_back(
        {static_cast<int>(r.tgid), static_cast<int>(r.fd)});
  }
  fds.scanned = static_cast<std::size_t>(std::min<std::uint64_t>(seen, NodeFds::kMaxFds));
  if (fds.scanned < NodeFds::kMaxFds) scan_fd_tables_besides(tables, fds, cancel);
  for (auto& [link, holders] : fds.holders) {
    auto key = [](const FdHolder& h) { return std::make_pair(h.pid, h.fd); };
    std::sort(holders.begin(), holders.end(),
              [&](const FdHolder& a, const FdHolder& b) { return key(a) < key(b); });
    holders.erase(
        std::unique(holders.begin(), holders.end(),
                    [&](const FdHolder& a, const FdHolder& b) { return key(a) == key(b); }),
        holders.end());
  }
  return fds;
}

}  // namespace

Result<NodeFds> scan_node_fds_bpf(const std::atomic<bool>* cancel) {
  if (auto ns = check_bpf_pid_namespace(); !ns) return std::move(ns).error();
  fd_holders* skel = hs_fd_holders_load();
  if (skel == nullptr) return fd_scan_error(Errc::permission, "cannot load the program", errno);
  LoadedFdHolders loaded(skel);
  auto out = run_pass(loaded);
  if (!out) return std::move(out).error();
  return holders_of(*out, *hs_fd_holders_seen(loaded.skel), cancel);
}

#endif

}  // namespace hangscan
