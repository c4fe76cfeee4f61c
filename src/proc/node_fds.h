// The pipes and sockets every process of the node holds: the fd tables behind a claim that
// nobody else holds an end, read on a helper thread while the capture goes on.
//
// Why: a pipe wait whose other end only the waiter holds ("only this process holds its write
// end", the Popen deadlock) is a claim about every fd table of the node: the kernel keeps no
// count of a pipe end's holders that /proc shows (a pipe's fdinfo has pos, flags, mnt_id and
// ino only), so every /proc/PID/fd is read, link by link. That is hundreds of directories and
// thousands of links on a busy node, several milliseconds of a 40 ms dump. The tables are not
// needed before the waits are resolved, after every stack is unwound: the run starts the scan
// as soon as a captured process is seen waiting on a pipe (and is running again), and the
// resolution takes its result. Nothing is guessed: the result is the same scan, made during
// the same dump, and a run that never asked for it scans as before.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hangscan {

struct FdHolder {
  int pid = 0;
  int fd = 0;
};

// What fd tables showed: holders of each pipe and socket by link ("pipe:[12]", "socket:[9]").
struct NodeFds {
  static constexpr std::size_t kMaxFds = 1u << 21;  // fds scanned on the whole node
  std::map<std::string, std::vector<FdHolder>> holders;
  std::set<int> unreadable;  // pids whose fd table or a link of it was refused
  std::size_t scanned = 0;   // links read (the scan stops at kMaxFds)
};

// Adds the pipes and sockets of `pid`'s fd table to `into`; with `links`, every link of it by
// fd (the job's processes: their waits are resolved from it). Links are read relative to the
// open fd directory.
void scan_fd_table(int pid, NodeFds& into, std::map<int, std::string>* links = nullptr);

// Every process's fd table (the numeric entries of /proc), as scan_fd_table reads them.
// `cancel` (may be null) is looked at between processes.
NodeFds scan_node_fds(const std::atomic<bool>* cancel = nullptr);

// The fd tables of the processes of /proc not in `seen`, added to `into`. Why: a scan made
// another way (BPF) completes itself with the tables it did not see, so a table neither way
// could read is counted as /proc counts it.
void scan_fd_tables_besides(const std::set<int>& seen, NodeFds& into,
                            const std::atomic<bool>* cancel = nullptr);

// How many fds the node's processes hold, up to `stop_at` (counting stops there): the sum of
// the sizes the kernel gives each /proc/PID/fd (its count of open fds, Linux 6.2+), one stat
// per process, no link read. nullopt where the kernel gives no count (an older kernel). Why: a
// scan's way is chosen by the node's size (the BPF iterator has a fixed cost that only many
// fds repay).
std::optional<std::size_t> count_node_fds(std::size_t stop_at);

// A way to scan the whole node (scan_node_fds, or the BPF iterator of capture/bpf_fd_holders.h,
// which proc cannot include): the run chooses, the scan calls it.
using NodeFdScanner = std::function<NodeFds(const std::atomic<bool>* cancel)>;

// One scan of the whole node on a helper thread, started at most once. Why a class: the run
// starts it where it learns it will be needed and the wait resolution joins it; a scan never
// taken is cancelled and joined when this goes.
class NodeFdScan {
 public:
  explicit NodeFdScan(NodeFdScanner scanner = scan_node_fds) : scanner_(std::move(scanner)) {}
  ~NodeFdScan();
  NodeFdScan(const NodeFdScan&) = delete;
  NodeFdScan& operator=(const NodeFdScan&) = delete;

  // Starts the scan (once; later calls do nothing). Without a thread to be had it does not
  // start, and take() scans.
  void start();
  bool started() const { return thread_.joinable() || taken_; }
  // Waits for the scan and hands its result over; one never started is made now, on the
  // caller's thread.
  const NodeFds* take();

 private:
  NodeFdScanner scanner_;
  std::atomic<bool> cancel_{false};
  NodeFds fds_;
  std::thread thread_;
  bool taken_ = false;
};

}  // namespace hangscan
