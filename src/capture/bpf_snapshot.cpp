#include "capture/bpf_snapshot.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "snapshot_events.h"
#include "util/hints.h"

#ifdef HANGSCAN_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include "snapshot.skel.h"
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

#ifndef HANGSCAN_HAVE_BPF

Result<std::unique_ptr<QuietSource>> open_bpf_snapshot(int pid) {
  (void)pid;
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

class BpfSnapshot : public QuietSource {
 public:
  explicit BpfSnapshot(snapshot* skel) : skel_(skel) {}
  ~BpfSnapshot() override { snapshot__destroy(skel_); }  // detaches and closes every fd
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
    skel_->data->copy_stacks = copy ? 1 : 0;
    int fd = bpf_iter_create(bpf_link__fd(skel_->links.snapshot_threads));
    if (fd < 0) return snapshot_error("cannot run the iterator", errno);
    std::vector<std::uint8_t> out;
    std::vector<std::uint8_t> buf(64 * 1024);
    ssize_t n = 0;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) out.insert(out.end(), buf.begin(), buf.begin() + n);
    }
    int err = errno;
    ::close(fd);
    if (n < 0) return snapshot_error("running the iterator", err);
    return parse_pass(out);
  }

  snapshot* skel_;
};

// libbpf prints its own messages to stderr by default; the library never prints.
int quiet_libbpf(enum libbpf_print_level, const char*, va_list) { return 0; }

}  // namespace

Result<std::unique_ptr<QuietSource>> open_bpf_snapshot(int pid) {
  libbpf_set_print(quiet_libbpf);
  snapshot* skel = snapshot__open();
  if (skel == nullptr) return snapshot_error("cannot open the program", errno);
  skel->rodata->target_tgid = static_cast<std::uint32_t>(pid);
  if (int err = snapshot__load(skel); err != 0) {
    snapshot__destroy(skel);
    return snapshot_error("cannot load the program", -err);
  }
  // The iterator visits only this process's threads (Linux 6.1+); older kernels visit all.
  union bpf_iter_link_info info {};
  info.task.pid = static_cast<std::uint32_t>(pid);
  LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));
  skel->links.snapshot_threads = bpf_program__attach_iter(skel->progs.snapshot_threads, &opts);
  if (skel->links.snapshot_threads == nullptr) {
    skel->links.snapshot_threads = bpf_program__attach_iter(skel->progs.snapshot_threads, nullptr);
  }
  if (skel->links.snapshot_threads == nullptr) {
    int err = errno;
    snapshot__destroy(skel);
    return snapshot_error("cannot attach the task iterator", err);
  }
  return std::unique_ptr<QuietSource>(std::make_unique<BpfSnapshot>(skel));
}

#endif

}  // namespace hangscan
