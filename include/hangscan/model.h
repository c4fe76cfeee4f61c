// The data model: what a capture produces and every writer consumes.
//
// Why: plain structs with no behaviour, so that capture (live or core), grouping, the agent
// wire format and the writers all speak one language. Identity is (host, pid, tid); rank is
// metadata that may be missing. Raw pc, build-id and module offset are always kept so a stack
// can be symbolized again elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hangscan/boxed.h"

namespace hangscan {

enum class FrameKind { native, inline_frame, python, kernel };

const char* frame_kind_name(FrameKind kind);

// A Python local variable rendered to a short string (see docs/output-schema.md).
struct Local {
  std::string name;
  std::string value;
  bool operator==(const Local&) const = default;
};

struct Frame {
  FrameKind kind = FrameKind::native;
  std::string function;             // demangled; "??" when unknown
  std::optional<std::string> file;  // source file, when DWARF / code object says
  std::optional<int> line;
  std::string module;         // path of the ELF module (native), empty for python
  std::uint64_t pc = 0;       // absolute address (native); 0 for python
  std::uint64_t offset = 0;   // pc relative to the module's load bias
  std::uint64_t sp = 0;       // native: the frame's stack pointer, 0 unknown (not written out)
  std::string build_id;       // hex, empty when unknown
  std::vector<Local> locals;  // python frames with --locals
  // Python 3.11+: the expression running, from the code object's location table. Columns are
  // 0-based UTF-8 byte offsets into the line, as CPython keeps them.
  std::optional<int> column;
  std::optional<int> end_line;
  std::optional<int> end_column;
  std::optional<std::string> source;  // the text of `line`, when the file was readable
  bool operator==(const Frame&) const = default;
};

// FrameStack: the frames of one stack, shared by every thread that has the same stack.
//
// Why: in a job of 100,000 ranks nearly all threads stand in a handful of distinct stacks. A
// thread holds its stack through a shared, immutable vector (copy on write), so a reader or a
// merge that interns stacks (StackTable, util/stack_table.h) keeps each distinct stack once,
// grouping keys on the stack's identity (id()), and code that builds or edits one thread's
// frames still reads and writes it like a std::vector<Frame>.
class FrameStack {
 public:
  using value_type = Frame;
  using iterator = std::vector<Frame>::iterator;
  using const_iterator = std::vector<Frame>::const_iterator;

  FrameStack() = default;
  FrameStack(std::vector<Frame> frames);  // NOLINT: implicit, a stack is a list of frames
  FrameStack(std::initializer_list<Frame> frames);
  FrameStack& operator=(std::vector<Frame> frames);
  FrameStack& operator=(std::initializer_list<Frame> frames);

  // Read access never copies.
  const std::vector<Frame>& frames() const;
  operator const std::vector<Frame>&() const { return frames(); }  // NOLINT
  const_iterator begin() const { return frames().begin(); }
  const_iterator end() const { return frames().end(); }
  const_iterator cbegin() const { return frames().begin(); }
  const_iterator cend() const { return frames().end(); }
  std::size_t size() const { return data_ ? data_->size() : 0; }
  bool empty() const { return size() == 0; }
  const Frame& operator[](std::size_t i) const { return (*data_)[i]; }
  const Frame& front() const { return data_->front(); }
  const Frame& back() const { return data_->back(); }
  const Frame* data() const { return data_ ? data_->data() : nullptr; }

  // Write access makes this thread's own copy first when the stack is shared.
  std::vector<Frame>& edit();
  iterator begin() { return edit().begin(); }
  iterator end() { return edit().end(); }
  Frame& operator[](std::size_t i) { return edit()[i]; }
  Frame& front() { return edit().front(); }
  Frame& back() { return edit().back(); }
  void push_back(Frame f);
  template <class... A>
  Frame& emplace_back(A&&... args) {
    return edit().emplace_back(std::forward<A>(args)...);
  }
  template <class... A>
  iterator insert(const_iterator pos, A&&... args) {
    auto off = pos - begin_const();
    return edit().insert(edit().begin() + off, std::forward<A>(args)...);
  }
  iterator erase(const_iterator first, const_iterator last);
  iterator erase(const_iterator pos);
  void pop_back() { edit().pop_back(); }
  void resize(std::size_t n) { edit().resize(n); }
  void reserve(std::size_t n) { edit().reserve(n); }
  void clear() { data_.reset(); }

  // The identity of the shared frames: equal ids mean equal stacks (the converse holds for
  // interned stacks). nullptr for an empty stack.
  const void* id() const { return data_ ? data_.get() : nullptr; }

  bool operator==(const FrameStack& o) const;
  bool operator==(const std::vector<Frame>& o) const { return frames() == o; }

 private:
  const_iterator begin_const() const { return frames().begin(); }

  std::shared_ptr<const std::vector<Frame>> data_;  // null: empty
};

// Why: a diagnostic is how "degrade, don't die" shows up in the report: what was not
// captured, why, and how to fix it.
struct Diagnostic {
  enum class Severity { info, warning, error };
  Severity severity = Severity::warning;
  std::string message;
  std::string hint;
  std::string host;  // empty: local / not host specific
  std::optional<int> pid;
  std::optional<int> tid;
  bool operator==(const Diagnostic&) const = default;
};

const char* severity_name(Diagnostic::Severity s);

// One thing a blocked thread waits on (docs/output-schema.md, "waits_on"): the process at the
// other end of the socket it reads, when that is known, and the transport in words.
struct WaitEdge {
  std::string host;        // node of the process at the other end; "" unknown
  std::optional<int> pid;  // nullopt: no process known (pipe with several writers,
                           // a listening socket, an RDMA device, another node not asked)
  std::optional<int> rank;
  std::string via;  // "tcp 10.0.0.1:40312 -> 10.0.0.2:29502", "unix 12 -> 13",
                    // "pipe:[77]", "tcp listening on 0.0.0.0:29500", "mutex 0x5617...",
                    // "child 4712 (wait4)", ...
  // The thread at the other end when one is known (a mutex's owner, read from the mutex).
  std::optional<int> tid;
  bool operator==(const WaitEdge&) const = default;
};

struct ThreadSnapshot {
  int tid = 0;
  std::string name;
  char state = '?';  // R S D T t Z X I, '?' unknown
  std::optional<std::string> wchan;
  std::optional<std::string> syscall;      // e.g. "futex" or "running"
  FrameStack frames;                       // merged native+python, innermost first
  FrameStack native_frames;                // native stack when a merge was not possible
  FrameStack kernel_frames;                // /proc/TID/stack where readable
  std::optional<bool> gil;                 // python targets: holds the GIL
  std::optional<bool> python_idle;         // python thread state exists but no frame
  std::optional<std::string> python_name;  // threading.Thread name, read from memory
  bool gc_collecting = false;              // runs Python's cycle collector
  bool finalizing = false;                 // runs Py_Finalize (the interpreter shuts down)
  bool is_main = false;                    // tid == pid
  bool crashed = false;                    // cores: the thread that took the signal
  // The native unwind stopped with an error before reaching the thread's entry point
  // (_start, clone): the outer frames are missing, so where the stack "starts" means nothing.
  bool incomplete = false;
  std::uint64_t cpu_ticks = 0;                 // utime+stime from /proc/TID/stat
  std::optional<std::uint64_t> stack_pointer;  // from /proc/TID/syscall (not written out)
  std::vector<std::uint64_t> syscall_args;     // from /proc/TID/syscall (not written out)
  // Times the thread left a CPU (nr_switches of /proc/TID/sched, read with its blocked time, so
  // only for a thread not running; not written out). A ptrace stop of a blocked thread adds
  // exactly 2, a real wake-up at least 1.
  std::optional<std::uint64_t> timeslices;
  std::vector<std::string> notes;  // per-thread problems ("unwind stopped: ...")
  // Seconds the thread had been off the CPU when it was described (before the freeze), from
  // the scheduler's record; nullopt when running or unknown (cores).
  std::optional<double> blocked_s;
  // Set when blocked_s counts from an earlier dump's observation (proc/since_state.h): when
  // that dump first saw this wait (Unix seconds). nullopt: blocked_s is this capture's reading.
  std::optional<double> blocked_first_seen_at;
  // What the thread's blocking call (read, recv, poll, epoll_wait, select, ...) waits on:
  // resolved from its file descriptors after the capture (proc/socket_waits.h).
  std::vector<WaitEdge> waits_on;
  // How a live capture took the thread: "ptrace" (stopped) or "bpf" (copied asleep, never
  // stopped: capture/quiet_source.h). nullopt: not a live capture (cores, --nonblocking).
  std::optional<std::string> capture;
};

struct PythonInfo {
  std::string version;         // "3.11.2"
  bool nonblocking = false;    // read without stopping: possibly inconsistent
  std::string locator;         // strategy that found the interpreter (for --verbose)
  bool finalizing = false;     // the interpreter is shutting down (Py_Finalize runs)
  bool gc_collecting = false;  // a cycle collection is running
};

// One asyncio task of a process's event loop (docs/output-schema.md, "asyncio_tasks").
struct AsyncioTask {
  std::string name;           // Task.get_name()
  std::uint64_t address = 0;  // the Task object
  // Where its coroutines are suspended: the task's own coroutine last, the one it awaits
  // (and so on) before it, innermost first like a stack. Empty: not started.
  std::vector<Frame> coroutines;
  std::optional<std::string> awaits_task;  // the task whose completion it waits for
  std::string awaits;  // type of the awaited future ("_asyncio.Future"), "" none
  bool operator==(const AsyncioTask&) const = default;
};

struct SignalInfo {
  int number = 0;
  std::string name;  // "SIGSEGV"
  std::optional<std::uint64_t> address;
  int code = 0;                   // si_code
  std::optional<int> sender_pid;  // sent by kill()/tgkill() (si_code <= 0): who sent it
};

// Memory of a live process and the memory cgroup that bounds it (docs/output-schema.md).
struct MemoryUsage {
  std::optional<std::uint64_t> rss_bytes;       // VmRSS
  std::optional<std::uint64_t> peak_rss_bytes;  // VmHWM
  std::string cgroup;                           // memory cgroup path ("" unknown)
  std::optional<std::uint64_t> cgroup_usage_bytes;
  std::optional<std::uint64_t> cgroup_limit_bytes;  // nullopt: no limit
  std::optional<std::uint64_t> gpu_bytes;           // NVML, when the node has it
  bool operator==(const MemoryUsage&) const = default;
};

// The container a process runs in, as its host sees it (docs/output-schema.md, "container").
// Why: from the host every process of every container is just a host pid; a user asking which
// pod or container hangs needs the name their runtime gave it. Named from the cgroup path and,
// where the runtime's own files say so, the runtime's name for it.
struct ContainerInfo {
  std::string runtime;  // "podman", "docker", "containerd", "cri-o"; "" (a Kubernetes pod, unknown)
  std::string id;       // the runtime's container id (hex), "" when the path names only the pod
  std::string name;     // the runtime's name for it ("" when its files do not say)
  std::string pod_uid;  // Kubernetes pod UID ("" outside Kubernetes)
  bool operator==(const ContainerInfo&) const = default;
};

// How a rank died, from what its node still knew (docs/output-schema.md, "death").
struct Death {
  std::string how;               // "killed" (a signal), "exited", "oom-kill", "segfault"
  std::optional<int> signal;     // terminating signal
  std::string signal_name;       // "SIGKILL"
  std::optional<int> exit_code;  // normal exit
  bool core_dumped = false;
  std::optional<double> at;  // Unix seconds (from the kernel log's clock)
  std::string cgroup;        // OOM kills in a memory cgroup
  std::optional<std::uint64_t> limit_bytes;
  std::optional<std::uint64_t> rss_bytes;  // anon + file + shmem RSS when killed
  std::string detail;                      // segfault: "at 0 ip 7f.. in libc.so.6"
  std::string core;                        // where its core went, when it dumped one
  std::vector<std::string> evidence;       // "exit status (/proc/PID/stat)", "kernel log"
  std::optional<int> pid;
  std::string comm;
  std::string host;
  std::optional<int> rank;  // linked to a rank (see docs/ranks.md)
  // Slurm's record (sacct) of the step that ran on this death's node: "42.1", "OUT_OF_MEMORY",
  // "0:125" (exit code:signal as sacct prints it); empty outside Slurm or without accounting.
  std::string slurm_step;
  std::string slurm_state;
  std::string slurm_exit_code;
  bool operator==(const Death&) const = default;
};

struct CoreInfo {
  std::string path;
  std::optional<SignalInfo> signal;
  std::optional<int> crashed_tid;
  std::vector<std::string> annotations;  // crash explained in words
  std::vector<std::string> omitted;      // memory the core writer left out
};

struct ProcessSnapshot {
  std::string host;
  int pid = 0;
  int ppid = 0;
  // When the process started (/proc/PID/stat field 22, clock ticks after the node's boot); 0
  // unknown. With the pid it names one process on its node: a pid reused later has another.
  std::uint64_t start_ticks = 0;
  std::optional<int> rank;
  std::optional<int> world_size;
  std::optional<int> local_rank;
  std::string launcher;  // "torchrun", "mpirun", ... empty if unknown
  // A launcher's own list of the workers it started: pid -> local rank (torchrun's, read from
  // its memory: python/launcher_children.h). Ties a reaped worker's pid to its rank. Not in the
  // JSON: known to the capture that read it (a local dump), not to agents' documents.
  std::map<int, int> worker_local_ranks;
  std::string role;  // "rank", "launcher", "helper", "process"
  std::vector<std::string> cmdline;
  std::string exe;
  char state = '?';
  double cpu_percent = -1;  // over --samples interval; <0 unknown
  std::optional<PythonInfo> python;
  std::vector<AsyncioTask> asyncio_tasks;  // pending tasks of Python event loops, by name
  std::vector<ThreadSnapshot> threads;
  std::int64_t pause_us = 0;
  Boxed<CoreInfo> core;  // heap-held, like memory and death: most processes have none
  std::optional<std::string> progress;  // "stuck" | "progressing" with --samples
  // Wall-clock time (Unix seconds) when the process was described; blocked_s of its threads
  // counts back from it. nullopt for cores.
  std::optional<double> captured_at;
  Boxed<MemoryUsage> memory;
  Boxed<Death> death;  // zombies and processes that died while captured
  // Its established TCP connections as "local -> remote" ("10.0.0.2:29502 -> 10.0.0.1:40312"):
  // the node's socket table, by which the front end finds the other end of a wait on another node.
  std::vector<std::string> tcp_connections;
  Boxed<ContainerInfo> container;  // heap-held: most processes run in none
  std::vector<Diagnostic> diagnostics;
};

// The process's main thread: the one marked so, or else the one whose tid is the pid; nullptr when
// it was not captured. One rule for every reader that speaks of "the process's stack" (grouping
// by main thread, waits, progress, states), so they never disagree about which thread that is.
bool is_main_thread(const ProcessSnapshot& p, const ThreadSnapshot& t);
const ThreadSnapshot* main_thread(const ProcessSnapshot& p);
// The main thread, or the first thread when the main one was not captured (a stack to compare
// is better than none); nullptr only for a process without threads.
const ThreadSnapshot* main_or_first_thread(const ProcessSnapshot& p);
// The captured thread with this tid; nullptr when it was not captured.
const ThreadSnapshot* thread_by_tid(const ProcessSnapshot& p, int tid);
// A thread's Python frames, innermost first (its native frames left out): what the analyses
// that speak of "where the Python code is" compare.
std::vector<const Frame*> python_frames(const ThreadSnapshot& t);

// A node that was asked but gave nothing usable (multi-node modes).
struct UnreachableNode {
  std::string host;
  std::string reason;
};

struct JobSnapshot {
  std::vector<ProcessSnapshot> processes;
  std::vector<Diagnostic> diagnostics;
  std::vector<UnreachableNode> unreachable;
  std::optional<int> expected_world_size;
  std::string job_id;  // slurm job id when known
  // Deaths in the job's time window that belong to no process of the report (reaped ranks),
  // from the nodes' kernel logs.
  std::vector<Death> deaths;
};

}  // namespace hangscan
