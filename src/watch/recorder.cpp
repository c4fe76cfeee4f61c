#include "watch/recorder.h"

#ifdef HANGSCAN_HAVE_BPF

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "capture/bpf_python.h"
#include "capture/bpf_snapshot.h"
#include "hangscan_watch.skel.h"
#include "proc/proc_files.h"
#include "util/job_control.h"
#include "watch/kernel_btf.h"
#include "watch/wait_copy_join.h"
#include "watch_events.h"

namespace hangscan {

namespace {

constexpr const char* kBpfHint =
    "run as root, or give hangscan CAP_BPF and CAP_PERFMON (setcap cap_bpf,cap_perfmon+ep); "
    "'hangscan doctor' checks eBPF readiness";

Error bpf_error(const std::string& what, int err) {
  return Error(Errc::permission, fmt::format("eBPF recorder: {}: {}", what, std::strerror(err)),
               err, kBpfHint);
}

class BpfRecorder : public Recorder {
 public:
  ~BpfRecorder() override {
    stop_ = true;
    if (wake_fd_ >= 0) (void)::eventfd_write(wake_fd_, 1);  // the drain thread's wait ends now
    if (drain_.joinable()) drain_.join();
    if (wake_fd_ >= 0) ::close(wake_fd_);
    if (ring_ != nullptr) ring_buffer__free(ring_);
    for (bpf_link* l : sample_links_) bpf_link__destroy(l);
    for (int fd : perf_fds_) ::close(fd);
    if (skel_ != nullptr) hangscan_watch__destroy(skel_);
  }

  Status init(const RecorderOptions& o) {
    KernelBtf kernel = KernelBtf::running_kernel();
    resume_copies_ = o.copy_at_resume && kernel.bpf_task_work();
    Status loaded = open_and_load(o, kernel);
    if (!loaded && resume_copies_) {  // a kernel that names the task work but refuses it here
      hangscan_watch__destroy(skel_);
      resume_copies_ = false;
      loaded = open_and_load(o, kernel);
    }
    if (!loaded) return loaded;
    if (int err = hangscan_watch__attach(skel_); err != 0) {
      return bpf_error("cannot attach to the scheduler and socket tracepoints", -err);
    }
    if (auto st = run_iterator(); !st) return st;
    if (auto st = open_sampling(o.sample_hz); !st) return st;
    ring_ =
        ring_buffer__new(bpf_map__fd(skel_->maps.events), &BpfRecorder::on_record, this, nullptr);
    if (ring_ == nullptr) return bpf_error("cannot open the ring buffer", errno);
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) return bpf_error("cannot make an eventfd", errno);
    drain_ = std::thread([this] {
      block_job_control_stops();  // a stall's capture may freeze a target meanwhile
      drain();
    });
    return Ok{};
  }

  Status watch(int pid) override {
    auto key = static_cast<std::uint32_t>(pid);
    hs_proc_stats zero{};
    if (bpf_map_update_elem(bpf_map__fd(skel_->maps.watched), &key, &zero, BPF_NOEXIST) != 0 &&
        errno != EEXIST) {
      return bpf_error(fmt::format("cannot watch pid {}", pid), errno);
    }
    // Its threads get their state now (the iterator), not at the next pass: a wait that begins
    // right after `watch` returned is seen. The kernel may refuse to make a state (its per-CPU
    // task-storage lock held by another BPF program, another recorder's iterator preempted in
    // it): a thread without one records nothing until a later pass, so the pass runs again.
    std::lock_guard lock(iter_mu_);
    for (int pass = 0;; ++pass) {
      if (auto st = run_iterator(); !st) return st;
      if (pass == kStatePasses || all_have_states(pid)) return Ok{};
    }
  }

  void unwatch(int pid) override {
    auto key = static_cast<std::uint32_t>(pid);
    bpf_map_delete_elem(bpf_map__fd(skel_->maps.watched), &key);
    bpf_map_delete_elem(bpf_map__fd(skel_->maps.py_procs), &key);
  }

  Status watch_python(int pid, const python::Located& where) override {
    auto p = py_proc_of(where);
    if (!p) return p.error();
    auto key = static_cast<std::uint32_t>(pid);
    if (bpf_map_update_elem(bpf_map__fd(skel_->maps.py_procs), &key, &*p, BPF_ANY) != 0)
      return bpf_error(fmt::format("cannot describe Python process {}", pid), errno);
    return Ok{};
  }

  // One batch read of the whole map (a few bpf() calls, not two per process): the watcher reads
  // it every 250 ms.
  std::map<int, ProcessCounters> watched() override {
    std::map<int, ProcessCounters> out;
    int fd = bpf_map__fd(skel_->maps.watched);
    constexpr std::uint32_t kChunk = 256;
    std::vector<std::uint32_t> keys(kChunk);
    std::vector<hs_proc_stats> vals(kChunk);
    std::uint32_t batch = 0;
    bool first = true;
    for (;;) {
      std::uint32_t count = kChunk;
      LIBBPF_OPTS(bpf_map_batch_opts, opts);
      int rc = bpf_map_lookup_batch(fd, first ? nullptr : &batch, &batch, keys.data(), vals.data(),
                                    &count, &opts);
      int err = rc < 0 ? -rc : 0;  // libbpf returns -errno
      for (std::uint32_t i = 0; i < count && (rc == 0 || err == ENOENT); ++i) {
        const hs_proc_stats& st = vals[i];
        out[static_cast<int>(keys[i])] =
            ProcessCounters{st.samples, st.io_jiffies, st.waits, st.waits_not_sent};
      }
      if (rc < 0) break;  // ENOENT: the end of the map; anything else: what was read so far
      first = false;
    }
    return out;
  }

  // Takes what the drain thread copied so far after `timeout`, or at once for what cannot wait
  // (see urgent()): samples and waits are finished in batches of seconds anyway, and each
  // wake-up of the watcher costs a context switch (tens of us on a VM).
  Status poll(Recording& out, std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [this] { return urgent(); });
    if (drain_err_ != 0) return bpf_error("reading the ring buffer", drain_err_);
    append(std::move(drained_), out);
    drained_ = Recording{};
    return Ok{};
  }

  RecorderCounters counters() override {
    RecorderCounters c;
    int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return c;
    std::vector<std::uint64_t> vals(static_cast<std::size_t>(ncpu));
    auto sum = [&](std::uint32_t which) {
      std::uint64_t total = 0;
      if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.counters), &which, vals.data()) == 0) {
        for (auto v : vals) total += v;
      }
      return total;
    };
    c.events = sum(HS_CNT_EVENTS);
    c.lost = sum(HS_CNT_LOST) + dropped_;
    c.stack_faults = sum(HS_CNT_STACK_FAULTS);
    return c;
  }

  bool records_oom() const override { return oom_; }
  bool records_wakers() const override { return wakers_; }
  std::string wait_copies() const override { return resume_copies_ ? "resume" : "iterator"; }

  // The threads' states are task storage, read by pidfd (one per thread of each watched process).
  // Where threads copy their own stacks as waits end, no pass ran while they slept: one does now.
  std::vector<WaitRecord> ongoing(std::int64_t now_ns, std::uint64_t min_ns) override {
    std::vector<WaitRecord> out;
    if (resume_copies_) {
      std::lock_guard iter_lock(iter_mu_);
      (void)run_iterator();  // a failed pass only costs the stacks of the waits still going
    }
    for (const auto& [pid, counters] : watched()) {
      auto tids = list_tasks(pid);
      if (!tids) continue;
      for (int tid : *tids) {
        hs_thread_state st{};
        if (lookup_state(pid, tid, st) != StateLookup::found) continue;
        bool copied = st.copied_seq == st.seq + 1;  // the iterator copied this very sleep's stack
        if (st.offcpu_start_ns == 0) {
          if (copied && st.asleep_before != 0) out.push_back(asleep_before(pid, tid, now_ns, st));
          continue;
        }
        if (st.syscall_nr < 0) continue;
        auto start = static_cast<std::int64_t>(st.offcpu_start_ns);
        if (now_ns - start < static_cast<std::int64_t>(min_ns)) continue;
        WaitRecord& w = out.emplace_back();
        w.pid = pid;
        w.tid = tid;
        w.end_ns = now_ns;
        w.syscall_nr = static_cast<long>(st.syscall_nr);
        w.arg0 = st.arg0;
        w.seq = st.seq;
        w.duration_ns = static_cast<std::uint64_t>(now_ns - start);
        w.waker_pid = static_cast<int>(st.waker_pid);
        w.waker_tid = static_cast<int>(st.waker_tid);
        w.waker_comm = std::string(st.waker_comm, strnlen(st.waker_comm, HS_COMM_LEN));
        w.ongoing = true;
        if (copied) {
          w.copy = sampled_stack_of(st.copy);
          w.copy.kernel.clear();
          w.has_user_stack = true;
        }
      }
    }
    return out;
  }

 private:
  // A thread asleep since before the recording, with the user stack the iterator copied of
  // that sleep (still valid: the thread has not run since).
  static WaitRecord asleep_before(int pid, int tid, std::int64_t now_ns,
                                  const hs_thread_state& st) {
    WaitRecord w;
    w.pid = pid;
    w.tid = tid;
    w.end_ns = now_ns;
    w.seq = st.seq;
    w.ongoing = true;
    w.before_window = true;
    w.copy = sampled_stack_of(st.copy);
    w.copy.kernel.clear();
    w.has_user_stack = true;
    return w;
  }

  // Opens the programs, sets what they are to do on this kernel, and loads them.
  Status open_and_load(const RecorderOptions& o, const KernelBtf& kernel) {
    skel_ = hangscan_watch__open();
    if (skel_ == nullptr) return bpf_error("cannot open the programs", errno);
    skel_->rodata->wait_threshold_ns = o.wait_threshold_ns;
    skel_->rodata->copy_margin_ns =
        2 * static_cast<std::uint64_t>(std::chrono::nanoseconds(kIterEvery).count());
    skel_->rodata->follow_children = o.follow_children ? 1 : 0;
    skel_->rodata->top_waits = o.top_waits;
    oom_ = kernel.mark_victim_takes_task();
    if (!oom_) bpf_program__set_autoload(skel_->progs.on_oom_victim, false);
    if (!o.data_progress || !kernel.socket_tracepoints()) {
      bpf_program__set_autoload(skel_->progs.on_sock_send, false);
      bpf_program__set_autoload(skel_->progs.on_sock_recv, false);
    }
    skel_->rodata->copy_at_resume = resume_copies_ ? 1 : 0;
    skel_->rodata->preempt_count_from_rq = kernel.preempt_count_from_rq();
    wakers_ = skel_->rodata->preempt_count_from_rq != 0;
    if (int err = hangscan_watch__load(skel_); err != 0)
      return bpf_error("cannot load the programs", -err);
    return Ok{};
  }

  // One software cpu-clock event per online CPU, each running on_cpu_sample.
  Status open_sampling(int hz) {
    int ncpu = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    for (int cpu = 0; cpu < ncpu; ++cpu) {
      perf_event_attr attr{};
      attr.size = sizeof(attr);
      attr.type = PERF_TYPE_SOFTWARE;
      attr.config = PERF_COUNT_SW_CPU_CLOCK;
      attr.freq = 1;
      attr.sample_freq = static_cast<std::uint64_t>(hz);
      int fd =
          static_cast<int>(syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
      if (fd < 0) {
        if (errno == ENODEV) continue;  // an offline CPU
        return bpf_error(fmt::format("cannot open the cpu-clock sampler on CPU {}", cpu), errno);
      }
      perf_fds_.push_back(fd);
      bpf_link* link = bpf_program__attach_perf_event(skel_->progs.on_cpu_sample, fd);
      if (link == nullptr) return bpf_error("cannot attach the on-CPU sampler", errno);
      sample_links_.push_back(link);
    }
    return Ok{};
  }

  // A pidfd of one thread, to look up its task storage. Thread pidfds are Linux 6.9+; before,
  // only a process's main thread has one (pidfd_open of the pid itself), so on those kernels
  // the waits still going at the end are read for main threads only (docs/watch.md).
  static int thread_pidfd(int pid, int tid) {
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, tid, kPidfdThread));
    if (fd < 0 && errno == EINVAL && tid == pid)
      fd = static_cast<int>(::syscall(SYS_pidfd_open, tid, 0));
    return fd;
  }

  // Whether every thread of `pid` whose state can be looked up (all of them from Linux 6.9,
  // else the main thread) has one.
  bool all_have_states(int pid) {
    auto tids = list_tasks(pid);
    if (!tids) return true;  // gone: nothing to record
    hs_thread_state st{};
    return std::none_of(tids->begin(), tids->end(), [&](int tid) {
      return lookup_state(pid, tid, st) == StateLookup::missing;
    });
  }

  enum class StateLookup { found, missing, unknown };  // unknown: no pidfd of that thread

  // A thread's state in task storage, looked up by a pidfd of the thread.
  StateLookup lookup_state(int pid, int tid, hs_thread_state& st) {
    int pidfd = thread_pidfd(pid, tid);
    if (pidfd < 0) return StateLookup::unknown;
    int rc = bpf_map_lookup_elem(bpf_map__fd(skel_->maps.thread_states), &pidfd, &st);
    ::close(pidfd);
    return rc == 0 ? StateLookup::found : StateLookup::missing;
  }

  // Runs copy_wait_stacks over every task: threads of watched processes get their state, and
  // those asleep in a long wait their user stack copied (into the ring). Called with iter_mu_.
  Status run_iterator() {
    int fd = bpf_iter_create(bpf_link__fd(skel_->links.copy_wait_stacks));
    if (fd < 0) return bpf_error("cannot run the wait-stack iterator", errno);
    char buf[64];
    ssize_t n = 0;
    do {
      n = ::read(fd, buf, sizeof(buf));
    } while (n > 0 || (n < 0 && errno == EINTR));
    int err = errno;
    ::close(fd);
    if (n < 0) return bpf_error("running the wait-stack iterator", err);
    return Ok{};
  }

  // The ring buffer is drained by a thread of its own: while the watcher finishes stacks
  // (libdw, up to seconds on a loaded machine) the 16 MiB ring would fill and records be lost.
  // Signals stay blocked in it (it inherits the mask of the thread that started the recorder).
  void drain() {
    // Without copies made by the threads themselves, the iterator copies long sleeps' stacks
    // after each drain, so the drain runs every 100 ms; else every second (each wake-up of a
    // thread costs tens of microseconds on a VM, and records wait in the kernel's ring anyway).
    int period_ms = resume_copies_ ? 1000 : static_cast<int>(kIterEvery.count());
    while (!stop_) {
      // The kernel wakes this thread when the ring fills up (2 MiB waiting) or at an exit, a
      // signal or an OOM kill; the rest is taken at the period. The wait holds no lock, so
      // drain_now() never waits for it.
      pollfd fds[2] = {{ring_buffer__epoll_fd(ring_), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      if (::poll(fds, 2, period_ms) < 0 && errno != EINTR) {
        std::lock_guard lock(mu_);
        drain_err_ = errno;
        cv_.notify_all();
        return;
      }
      if (stop_) return;
      Recording got;
      int n = 0;
      {
        std::lock_guard ring_lock(ring_mu_);
        sink_ = &got;
        n = ring_buffer__consume(ring_);
        sink_ = nullptr;
        join_.join(got, std::chrono::steady_clock::now(), false);
      }
      if (auto now = std::chrono::steady_clock::now();
          !resume_copies_ && now - last_iter_ >= kIterEvery) {
        std::lock_guard iter_lock(iter_mu_);
        (void)run_iterator();  // a failed pass only costs the stacks of this pass's waits
        last_iter_ = now;
      }
      std::lock_guard lock(mu_);
      if (n < 0 && n != -EINTR) {
        drain_err_ = -n;
        cv_.notify_all();
        return;
      }
      if (got.samples.empty() && got.waits.empty() && got.events.empty()) continue;
      // Bounded while nobody takes them (a watchdog capture): beyond, counted as lost.
      std::size_t held = drained_.samples.size() + drained_.waits.size();
      if (held + got.samples.size() + got.waits.size() > kMaxHeld) {
        dropped_ += got.samples.size() + got.waits.size();
        got.samples.clear();
        got.waits.clear();
      }
      append(std::move(got), drained_);
      if (urgent()) cv_.notify_all();
    }
  }

  void drain_now(Recording& out) override {
    Recording got;
    {
      std::lock_guard ring_lock(ring_mu_);  // held by the drain thread only while it consumes
      sink_ = &got;
      ring_buffer__consume(ring_);
      join_.join(got, std::chrono::steady_clock::now(), false);
      if (join_.held() > 0) {  // a wait that just ended: its thread copies its stack right after
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ring_buffer__consume(ring_);
      }
      sink_ = nullptr;
      join_.join(got, std::chrono::steady_clock::now(), true);
    }
    std::lock_guard lock(mu_);
    append(std::move(drained_), out);
    drained_ = Recording{};
    append(std::move(got), out);
  }

  // What the watcher must see before its poll's timeout: an exit, a signal or an OOM kill (a
  // window may end with it), a read error, or many records held.
  bool urgent() const {
    return !drained_.events.empty() || drain_err_ != 0 ||
           drained_.samples.size() + drained_.waits.size() >= kWakeHeld;
  }

  static void append(Recording&& from, Recording& to) {
    std::move(from.samples.begin(), from.samples.end(), std::back_inserter(to.samples));
    std::move(from.waits.begin(), from.waits.end(), std::back_inserter(to.waits));
    std::move(from.events.begin(), from.events.end(), std::back_inserter(to.events));
  }

  static int on_record(void* ctx, void* data, std::size_t size) {
    auto* self = static_cast<BpfRecorder*>(ctx);
    if (self->sink_ != nullptr) {
      decode_record(std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(data), size),
                    *self->sink_);
    }
    return 0;
  }

  hangscan_watch* skel_ = nullptr;
  ring_buffer* ring_ = nullptr;
  std::vector<int> perf_fds_;
  std::vector<bpf_link*> sample_links_;
  Recording* sink_ = nullptr;   // where records go during a consume (guarded by ring_mu_)
  WaitCopyJoin join_;           // waits held for the copy their thread makes (guarded by ring_mu_)
  bool resume_copies_ = false;  // threads copy their own stacks as their waits end
  bool oom_ = false;
  bool wakers_ = false;
  std::thread drain_;
  int wake_fd_ = -1;  // eventfd: ends the drain thread's wait when the recorder goes
  std::atomic<bool> stop_{false};
  std::mutex ring_mu_;  // one reader of the ring at a time: the drain thread or drain_now()
  std::mutex mu_;
  std::condition_variable cv_;
  Recording drained_;   // copied, not yet taken by poll() (guarded by mu_)
  std::mutex iter_mu_;  // one run of the iterator at a time (its scratch)
  std::chrono::steady_clock::time_point last_iter_{};
  int drain_err_ = 0;                      // errno of a failed ring-buffer read (guarded by mu_)
  std::atomic<std::uint64_t> dropped_{0};  // records beyond kMaxHeld
  // Records held between two poll() calls: 2048 stack copies, ~35 MiB (the ring holds ~950).
  static constexpr std::size_t kMaxHeld = 2048;
  static constexpr std::size_t kWakeHeld = 512;  // ~8 MiB of stack copies
  // How often the iterator copies the stacks of long sleeps: a wait gets its user stack when a
  // pass finds it already among its process's longest, so waits that end sooner than this after
  // that may have none (docs/watch.md, "Waits"). Each pass walks every task of the machine.
  static constexpr std::chrono::milliseconds kIterEvery{100};
  // Passes of the iterator after the first when `watch` finds a thread without its state.
  static constexpr int kStatePasses = 3;
  // pidfd_open's flag for a pidfd of one thread (Linux 6.9; O_EXCL in <linux/pidfd.h>).
  static constexpr unsigned kPidfdThread = O_EXCL;
};

}  // namespace

Result<std::unique_ptr<Recorder>> Recorder::start(const RecorderOptions& options) {
  // The programs know tasks by host pids: in a pid namespace of its own, hangscan's are others.
  if (auto ns = check_bpf_pid_namespace(); !ns) return std::move(ns).error();
  // libbpf's own messages (the verifier's log) only on request: HANGSCAN_BPF_LOG=1.
  const char* log = std::getenv("HANGSCAN_BPF_LOG");
  if (log == nullptr || std::string(log) != "1")
    libbpf_set_print([](libbpf_print_level, const char*, va_list) { return 0; });
  // The older kernels' way of copying wait stacks, on request (tests and benchmarks of it).
  RecorderOptions o = options;
  if (const char* c = std::getenv("HANGSCAN_WAIT_COPIES");
      c != nullptr && std::string(c) == "iterator")
    o.copy_at_resume = false;
  auto r = std::make_unique<BpfRecorder>();
  if (auto st = r->init(o); !st) return st.error();
  return std::unique_ptr<Recorder>(std::move(r));
}

bool recorder_built_in() { return true; }

}  // namespace hangscan

#else  // !HANGSCAN_HAVE_BPF

namespace hangscan {

Result<std::unique_ptr<Recorder>> Recorder::start(const RecorderOptions&) {
  return Error(Errc::unsupported, "this hangscan was built without eBPF support", 0,
               "install clang, bpftool and libbpf-dev (tools/deps.sh package) and rebuild");
}

bool recorder_built_in() { return false; }

}  // namespace hangscan

#endif
