#include "capture/bpf_snapshot.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "snapshot_events.h"
#include "util/hints.h"

#ifdef HANGSCAN_HAVE_BPF
#include <bpf/bpf.h>
#include <unistd.h>

#include "capture/snapshot_lskel.h"
#endif

namespace hangscan {

Registers registers_of_pt_regs(const hs_regs& i, std::uint64_t fs_base) {
  Registers r;
  auto& o = r.raw;
  o.r15 = i.r15;
  o.r14 = i.r14;
  o.r13 = i.r13;
  o.r12 = i.r12;
  o.rbp = i.bp;
  o.rbx = i.bx;
  o.r11 = i.r11;
  o.r10 = i.r10;
  o.r9 = i.r9;
  o.r8 = i.r8;
  o.rax = i.ax;
  o.rcx = i.cx;
  o.rdx = i.dx;
  o.rsi = i.si;
  o.rdi = i.di;
  o.orig_rax = i.orig_ax;
  o.rip = i.ip;
  o.cs = i.cs;
  o.eflags = i.flags;
  o.rsp = i.sp;
  o.ss = i.ss;
  o.fs_base = fs_base;
  return r;
}

Status check_bpf_pid_namespace() {
  constexpr ino_t kInitPidNs = 0xEFFFFFFCU;  // PROC_PID_INIT_INO: the host's pid namespace
  constexpr long kNsfsMagic = 0x6e736673;    // NSFS_MAGIC: the file system of namespace files
  struct stat st {};
  struct statfs fs {};
  if (::stat("/proc/self/ns/pid", &st) != 0 || ::statfs("/proc/self/ns/pid", &fs) != 0) {
    int err = errno;
    return Error(Errc::unsupported,
                 fmt::format("cannot tell which pid namespace hangscan runs in "
                             "(/proc/self/ns/pid: {}): BPF is off",
                             std::strerror(err)),
                 err, hints::bpf_pid_namespace());
  }
  if (static_cast<long>(fs.f_type) == kNsfsMagic && st.st_ino == kInitPidNs) return Ok{};
  return Error(Errc::unsupported,
               "hangscan runs in a pid namespace of its own (a container's) and BPF knows "
               "processes by their host pids: BPF is off",
               0, hints::bpf_pid_namespace());
}

#ifndef HANGSCAN_HAVE_BPF

Result<std::shared_ptr<QuietLoader>> load_bpf_snapshot() {
  return Error(Errc::unsupported, "BPF snapshot: this hangscan was built without eBPF support", 0,
               hints::quiet_dump_off());
}

#else

namespace {

Error snapshot_error(const std::string& what, int err) {
  return Error(Errc::permission, fmt::format("BPF snapshot: {}: {}", what, std::strerror(err)), err,
               hints::quiet_dump_off());
}

// The records of one pass, parsed out of the iterator's output.
struct PassRecord {
  hs_snap_thread h{};
  std::vector<std::uint8_t> stack;
};

// Parses the iterator's output: a header per thread, followed by its stack bytes.
Result<std::vector<PassRecord>> parse_pass(const std::vector<std::uint8_t>& out) {
  std::vector<PassRecord> recs;
  std::size_t at = 0;
  while (at < out.size()) {
    if (out.size() - at < sizeof(hs_snap_thread))
      return Error(Errc::bad_data, "BPF snapshot: a record is cut short");
    PassRecord& r = recs.emplace_back();
    std::memcpy(&r.h, out.data() + at, sizeof(r.h));
    at += sizeof(r.h);
    if (r.h.stack_len > HS_SNAP_STACK_BYTES || out.size() - at < r.h.stack_len)
      return Error(Errc::bad_data, "BPF snapshot: a stack copy is cut short");
    r.stack.assign(out.begin() + static_cast<std::ptrdiff_t>(at),
                   out.begin() + static_cast<std::ptrdiff_t>(at + r.h.stack_len));
    at += r.h.stack_len;
  }
  return recs;
}

// The loaded program, shared by the sources of one run. Its globals (the tgid filter, the pass
// kind) and its scratch map serve one pass at a time: passes hold `mu`.
struct LoadedSnapshot {
  explicit LoadedSnapshot(snapshot* s) : skel(s) {}
  ~LoadedSnapshot() { hs_snapshot_destroy(skel); }  // closes every fd of the program
  LoadedSnapshot(const LoadedSnapshot&) = delete;
  LoadedSnapshot& operator=(const LoadedSnapshot&) = delete;
  snapshot* skel;
  std::mutex mu;
};

// The snapshot on one process: its own iterator link over the shared program.
class BpfSnapshot : public QuietSource {
 public:
  BpfSnapshot(std::shared_ptr<LoadedSnapshot> loaded, int link, int pid)
      : loaded_(std::move(loaded)), link_(link), pid_(pid) {}
  ~BpfSnapshot() override { ::close(link_); }
  BpfSnapshot(const BpfSnapshot&) = delete;
  BpfSnapshot& operator=(const BpfSnapshot&) = delete;

  std::string name() const override { return "bpf"; }

  Result<QuietTake> take() override {
    auto recs = run(true);
    if (!recs) return std::move(recs).error();
    QuietTake out;
    for (PassRecord& r : *recs) {
      bool copied = (r.h.flags & HS_SNAP_COPIED) != 0;
      if ((r.h.flags & HS_SNAP_ASLEEP) == 0 || !copied) {
        out.awake.push_back(static_cast<int>(r.h.tid));
        continue;
      }
      QuietThread& t = out.asleep.emplace_back();
      t.tid = static_cast<int>(r.h.tid);
      t.regs = registers_of_pt_regs(r.h.regs, r.h.fs_base);
      t.seq = r.h.seq;
      t.stack.start = r.h.regs.sp;
      t.stack.bytes = std::move(r.stack);
    }
    return out;
  }

  Result<std::map<int, std::uint64_t>> asleep_now() override {
    auto recs = run(false);
    if (!recs) return std::move(recs).error();
    std::map<int, std::uint64_t> out;
    for (const PassRecord& r : *recs)
      if ((r.h.flags & HS_SNAP_ASLEEP) != 0) out[static_cast<int>(r.h.tid)] = r.h.seq;
    return out;
  }

 private:
  // One pass of the iterator over the process's threads; with `copy`, registers and stacks.
  Result<std::vector<PassRecord>> run(bool copy) {
    std::vector<std::uint8_t> out;
    int err = 0;
    {
      std::lock_guard lock(loaded_->mu);
      *hs_snapshot_target_tgid(loaded_->skel) = static_cast<std::uint32_t>(pid_);
      *hs_snapshot_copy_stacks(loaded_->skel) = copy ? 1 : 0;
      int fd = bpf_iter_create(link_);
      if (fd < 0) return snapshot_error("cannot run the iterator", errno);
      std::vector<std::uint8_t> buf(64 * 1024);
      ssize_t n = 0;
      while ((n = ::read(fd, buf.data(), buf.size())) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0) out.insert(out.end(), buf.begin(), buf.begin() + n);
      }
      err = n < 0 ? errno : 0;
      ::close(fd);
    }
    if (err != 0) return snapshot_error("running the iterator", err);
    return parse_pass(out);
  }

  std::shared_ptr<LoadedSnapshot> loaded_;
  int link_;  // the iterator's link, limited to the process where the kernel can
  int pid_;
};

class BpfSnapshotLoader : public QuietLoader {
 public:
  explicit BpfSnapshotLoader(std::shared_ptr<LoadedSnapshot> loaded) : loaded_(std::move(loaded)) {}
  std::string name() const override { return "bpf"; }

  Result<std::unique_ptr<QuietSource>> open(int pid) override {
    int prog = hs_snapshot_prog_fd(loaded_->skel);
    // The iterator visits only this process's threads (Linux 6.1+); older kernels visit all
    // and the program's tgid check keeps the process's own.
    union bpf_iter_link_info info {};
    info.task.pid = static_cast<std::uint32_t>(pid);
    LIBBPF_OPTS(bpf_link_create_opts, opts, .iter_info = &info, .iter_info_len = sizeof(info));
    int link = bpf_link_create(prog, 0, BPF_TRACE_ITER, &opts);
    if (link < 0) link = bpf_link_create(prog, 0, BPF_TRACE_ITER, nullptr);
    if (link < 0) return snapshot_error("cannot attach the task iterator", errno);
    return std::unique_ptr<QuietSource>(std::make_unique<BpfSnapshot>(loaded_, link, pid));
  }

 private:
  std::shared_ptr<LoadedSnapshot> loaded_;
};

}  // namespace

Result<std::shared_ptr<QuietLoader>> load_bpf_snapshot() {
  if (auto ns = check_bpf_pid_namespace(); !ns) return std::move(ns).error();
  snapshot* skel = hs_snapshot_load();
  if (skel == nullptr) return snapshot_error("cannot load the program", errno);
  auto loaded = std::make_shared<LoadedSnapshot>(skel);
  return std::shared_ptr<QuietLoader>(std::make_shared<BpfSnapshotLoader>(std::move(loaded)));
}

#endif

}  // namespace hangscan
