#include "target/core_target.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <map>

#include <fmt/core.h>

#include "proc/proc_files.h"
#include "proc/target_file.h"
#include "target/core_modules.h"
#include "target/initial_stack.h"
#include "util/diagnostic.h"
#include "util/parse_number.h"

namespace hangscan {
namespace {

// "START-END SIZE reason" (CoreFile::omitted()) -> END - START; 0 when malformed.
std::uint64_t omitted_range_size(std::string_view line) {
  auto from = take_int<std::uint64_t>(line, 16);
  if (!from || !line.starts_with('-')) return 0;
  line.remove_prefix(1);
  auto to = take_int<std::uint64_t>(line, 16);
  if (!to || *to <= *from) return 0;
  return *to - *from;
}

constexpr std::string_view kDeleted = " (deleted)";
// System call numbers are small; orig_rax is ~0 (-1) where there is none.
constexpr std::uint64_t kMaxSyscall = 4096;

// Reads only what the core holds. Build-ids must come from here, not from the files on disk.
class CoreOnlyMemory : public MemoryReader {
 public:
  explicit CoreOnlyMemory(const CoreFile& core) : core_(core) {}
  std::size_t read(std::uint64_t addr, void* buf, std::size_t len) override {
    return core_.read(addr, buf, len);
  }

 private:
  const CoreFile& core_;
};

// Core memory first; for file-backed pages the kernel did not dump (read-only code and
// data, e.g. `.rodata`), the same bytes from the mapped file on this machine.
class CoreMemory : public MemoryReader {
 public:
  CoreMemory(const CoreFile& core, const std::vector<Mapping>& maps, const CoreModules& mods)
      : core_(core), maps_(maps), mods_(mods) {}
  ~CoreMemory() override {
    for (auto& [path, fd] : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }
  CoreMemory(const CoreMemory&) = delete;
  CoreMemory& operator=(const CoreMemory&) = delete;

  std::size_t read(std::uint64_t addr, void* buf, std::size_t len) override {
    auto* out = static_cast<std::uint8_t*>(buf);
    std::size_t done = 0;
    while (done < len) {
      std::uint64_t a = addr + done;
      std::size_t got = core_.read(a, out + done, len - done);
      done += got;
      if (done == len) break;
      a = addr + done;
      std::size_t from_file = read_file_backed(a, out + done, len - done);
      if (from_file == 0) break;
      done += from_file;
    }
    return done;
  }

 private:
  std::size_t read_file_backed(std::uint64_t a, std::uint8_t* out, std::size_t len) {
    const CoreSegment* seg = core_.segment_at(a);
    if (seg != nullptr && a - seg->vaddr < seg->filesz) return 0;  // present, yet unreadable
    auto it = std::upper_bound(maps_.begin(), maps_.end(), a,
                               [](std::uint64_t x, const Mapping& m) { return x < m.start; });
    if (it == maps_.begin()) return 0;
    const Mapping& m = *--it;
    if (!m.contains(a) || !m.is_file()) return 0;
    int fd = fd_for(m.path);
    if (fd < 0) return 0;
    std::uint64_t limit = m.end - a;
    if (seg != nullptr) limit = std::min(limit, seg->end() - a);
    auto n = static_cast<std::size_t>(std::min<std::uint64_t>(len, limit));
    ssize_t got = pread(fd, out, n, static_cast<off_t>(m.offset + (a - m.start)));
    return got > 0 ? static_cast<std::size_t>(got) : 0;
  }

  int fd_for(const std::string& path) {
    auto it = fds_.find(path);
    if (it != fds_.end()) return it->second;
    int fd = -1;
    if (auto local = mods_.local_path(path)) fd = open_regular_file(*local);
    fds_.emplace(path, fd);
    return fd;
  }

  const CoreFile& core_;
  const std::vector<Mapping>& maps_;
  const CoreModules& mods_;
  std::map<std::string, int> fds_;
};

class CoreFreeze : public Freeze {
 public:
  explicit CoreFreeze(std::vector<FrozenThread> t) : threads_(std::move(t)) {}
  const std::vector<FrozenThread>& threads() const override { return threads_; }
  std::int64_t release() override { return 0; }

 private:
  std::vector<FrozenThread> threads_;
};

std::string perms_of(std::uint32_t flags) {
  std::string p = "---p";
  if (flags & PF_R) p[0] = 'r';
  if (flags & PF_W) p[1] = 'w';
  if (flags & PF_X) p[2] = 'x';
  return p;
}

// Segments give every mapping and its permissions; NT_FILE gives the file behind each.
// A torch process has ~1,000 segments and ~1,500 files: both lookups are binary searches.
std::vector<Mapping> build_mappings(const CoreFile& core) {
  std::vector<Mapping> out;
  std::vector<const CoreFileMap*> files;
  for (const auto& f : core.files()) files.push_back(&f);
  std::stable_sort(files.begin(), files.end(),
                   [](const CoreFileMap* a, const CoreFileMap* b) { return a->start < b->start; });
  auto file_at = [&files](std::uint64_t a) -> const CoreFileMap* {
    auto it = std::upper_bound(files.begin(), files.end(), a,
                               [](std::uint64_t x, const CoreFileMap* f) { return x < f->start; });
    if (it == files.begin()) return nullptr;
    --it;
    return a < (*it)->end ? *it : nullptr;
  };
  for (const auto& s : core.segments()) {
    Mapping m;
    m.start = s.vaddr;
    m.end = s.end();
    m.perms = perms_of(s.flags);
    if (const CoreFileMap* f = file_at(s.vaddr)) {
      m.path = f->path;
      m.offset = f->file_offset + (s.vaddr - f->start);
      m.end = std::min(m.end, f->end);
    }
    out.push_back(std::move(m));
  }
  // Files the core writer left no segment for still belong in the module map. Segments are
  // sorted by address; the running maximum of their ends answers "does any overlap".
  std::vector<std::uint64_t> max_end(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    max_end[i] = std::max(out[i].end, i > 0 ? max_end[i - 1] : 0);
  }
  const std::size_t segment_count = out.size();
  for (const auto& f : core.files()) {
    auto first_after =
        std::lower_bound(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(segment_count),
                         f.end, [](const Mapping& m, std::uint64_t x) { return m.start < x; });
    auto before = static_cast<std::size_t>(first_after - out.begin());
    bool covered = before > 0 && max_end[before - 1] > f.start;
    if (!covered) out.push_back(Mapping{f.start, f.end, f.file_offset, "r--p", f.path});
  }
  for (auto& m : out) {
    if (m.path.size() > kDeleted.size() && m.path.ends_with(kDeleted)) {
      m.path.resize(m.path.size() - kDeleted.size());
      m.deleted = true;
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  // Label the main thread's stack and the vDSO as /proc/PID/maps would.
  auto label = [&out](std::uint64_t addr, const char* name) {
    for (auto& m : out) {
      if (m.contains(addr) && m.path.empty()) m.path = name;
    }
  };
  if (auto vdso = core.auxv_value(AT_SYSINFO_EHDR)) label(*vdso, "[vdso]");
  if (auto execfn = core.auxv_value(AT_EXECFN)) label(*execfn, "[stack]");
  return out;
}

class CoreTarget : public Target {
 public:
  CoreTarget(std::unique_ptr<CoreFile> core, const CoreOpenOptions& opts)
      : core_(std::move(core)),
        opts_(opts),
        maps_(build_mappings(*core_)),
        modules_(opts.sysroot, opts.lib_paths, opts.file_cache),
        memory_(*core_, maps_, modules_) {
    exe_core_path_ = find_exe_path();
    CoreOnlyMemory core_only(*core_);
    modules_.resolve_all(maps_, core_only, exe_core_path_, opts_.exe);
    crashed_tid_ = crashed_thread(*core_);
  }

  int pid() const override {
    if (core_->psinfo() && core_->psinfo()->pid > 0) return core_->psinfo()->pid;
    return core_->threads().front().tid;
  }
  bool is_live() const override { return false; }
  std::string describe() const override { return fmt::format("core {}", core_->name()); }
  MemoryReader& memory() override { return memory_; }
  const std::vector<Mapping>& mappings() const override { return maps_; }

  std::optional<std::string> local_path(const Mapping& m) const override {
    if (!m.is_file()) return std::nullopt;
    if (auto module = modules_.local_path(m.path)) return module;
    // Not a mapped module (a Python source file, say): the same path under --sysroot.
    if (!opts_.sysroot.empty() && access((opts_.sysroot + m.path).c_str(), R_OK) == 0)
      return opts_.sysroot + m.path;
    return std::nullopt;
  }

  // A core's file names resolve under --sysroot (else this machine's root), read with the
  // user and group the core names (NT_PRPSINFO; its supplementary groups are not recorded).
  Result<TargetFile> read_target_file(const std::string& name, std::size_t max_bytes) override {
    if (name.empty() || name[0] != '/') return Error(Errc::not_found, "no such file");
    if (!core_->psinfo()) return Error(Errc::permission, "the core names no user to read it as");
    TargetFileRequest r;
    r.root = opts_.sysroot.empty() ? std::string("/") : opts_.sysroot;
    r.name = name;
    r.as = FileCredentials{core_->psinfo()->uid, core_->psinfo()->gid, {}};
    r.max_bytes = max_bytes;
    return read_file_as(r);
  }

  std::vector<int> thread_ids() override {
    std::vector<int> out;
    for (const auto& t : core_->threads()) out.push_back(t.tid);
    return out;
  }

  Result<std::unique_ptr<Freeze>> freeze(const Deadline&) override {
    std::vector<FrozenThread> threads;
    for (const auto& t : core_->threads()) threads.push_back(FrozenThread{t.tid, t.regs, {}});
    return std::unique_ptr<Freeze>(std::make_unique<CoreFreeze>(std::move(threads)));
  }

  void describe_process(ProcessSnapshot& out) override {
    out.pid = pid();
    const auto& ps = core_->psinfo();
    out.ppid = ps ? ps->ppid : core_->threads().front().ppid;
    // NT_PRPSINFO's state is that of the dumping thread while it dumped ('D', or 't' under
    // gcore's ptrace stop): meaningless for grouping. The main thread's registers say more.
    ThreadSnapshot main_thread;
    main_thread.tid = out.pid;
    describe_thread(main_thread);
    out.state = main_thread.state;
    load_initial_stack();
    if (stack_ && !stack_->argv.empty()) {
      out.cmdline = stack_->argv;
    } else if (ps) {
      out.cmdline = split_args(ps->psargs);
    }
    out.exe = exe_core_path_;
    out.pause_us = 0;
    CoreInfo info;
    info.path = core_->name();
    info.signal = fatal_signal(*core_);
    info.crashed_tid = crashed_tid_;
    info.omitted = core_->omitted();
    // Pages our writer could not read are holes that read as zeros: say so, or a stack cut
    // short there would look like a complete one.
    std::uint64_t unreadable = 0;
    for (const auto& line : info.omitted) {
      if (line.ends_with(" unreadable")) unreadable += omitted_range_size(line);
    }
    if (unreadable > 0) {
      out.diagnostics.push_back(make_diagnostic(
          Diagnostic::Severity::warning,
          fmt::format("{}: {} bytes of its memory could not be read when it was written and read "
                      "as zeros (listed as unreadable under omitted)",
                      core_->name(), unreadable),
          "stacks that run into those ranges stop early; take the core again if the process still "
          "runs",
          out.pid));
    }
    out.core = std::move(info);
    for (const auto& w : core_->warnings()) {
      out.diagnostics.push_back(make_diagnostic(
          Diagnostic::Severity::warning, fmt::format("{}: {}", core_->name(), w),
          core_->truncated() ? "the core is incomplete; stacks may stop early. Take it "
                               "again with enough disk space and `ulimit -c unlimited`"
                             : "the core is damaged; what could be read is shown",
          out.pid));
    }
    if (auto d = stacks_outside_memory()) {
      d->pid = out.pid;
      out.diagnostics.push_back(std::move(*d));
    }
    for (auto d : modules_.diagnostics()) {
      d.pid = out.pid;
      out.diagnostics.push_back(std::move(d));
    }
  }

  void describe_thread(ThreadSnapshot& out) override {
    const CoreThread* t = core_->thread(out.tid);
    if (t == nullptr) return;
    out.is_main = t->tid == pid();
    if (out.is_main && core_->psinfo()) out.name = core_->psinfo()->fname;
    out.crashed = crashed_tid_ && *crashed_tid_ == t->tid;
    // A thread that entered the kernel by a system call keeps its number in orig_rax; one
    // stopped by an interrupt or a fault has -1 there.
    std::uint64_t nr = t->regs.raw.orig_rax;
    if (nr < kMaxSyscall) {
      out.state = 'S';
      out.syscall = syscall_name(static_cast<long>(nr));
    } else {
      out.state = 'R';
      out.syscall = "running";
    }
  }

  // The environment the process started with. Callers wanting what it sees now (setenv,
  // os.environ) use read_environment() from discovery/environ_memory.h, which reads libc's
  // `environ` through memory() and falls back to this.
  std::vector<std::string> environment() override {
    load_initial_stack();
    return stack_ ? stack_->envp : std::vector<std::string>{};
  }

 private:
  // The module mapped at the entry point is the executable, under the path it had.
  std::string find_exe_path() const {
    for (auto at : {AT_ENTRY, AT_PHDR}) {
      if (auto addr = core_->auxv_value(at)) {
        for (const auto& m : maps_) {
          if (m.contains(*addr) && m.is_file()) return m.path;
        }
      }
    }
    if (core_->psinfo()) {
      const std::string& comm = core_->psinfo()->fname;
      for (const auto& m : maps_) {
        if (m.is_file() && m.offset == 0 && m.path.ends_with("/" + comm)) return m.path;
      }
    }
    return {};
  }

  // Threads whose stack pointer lies in no memory the core holds: nothing of their stacks
  // can be unwound. All of them: the program headers do not describe the memory the
  // registers point into (a damaged or mis-assembled core), which must not pass for a
  // complete report.
  std::optional<Diagnostic> stacks_outside_memory() const {
    // A stack overflow leaves the stack pointer just below its stack's mapping, whose
    // frames are unwound all the same.
    constexpr std::uint64_t kBelowStack = 64 * 1024;
    const auto& segs = core_->segments();
    std::size_t outside = 0;
    for (const auto& t : core_->threads()) {
      std::uint64_t sp = t.regs.sp();
      std::uint64_t word = 0;
      if (core_->read(sp, &word, sizeof(word)) == sizeof(word)) continue;
      auto above =
          std::upper_bound(segs.begin(), segs.end(), sp,
                           [](std::uint64_t a, const CoreSegment& s) { return a < s.vaddr; });
      if (above == segs.end() || above->vaddr - sp > kBelowStack ||
          core_->read(above->vaddr, &word, sizeof(word)) != sizeof(word))
        ++outside;
    }
    if (outside == 0) return std::nullopt;
    const std::size_t all = core_->threads().size();
    return make_diagnostic(
        Diagnostic::Severity::warning,
        outside == all
            ? fmt::format("{}: no thread's stack pointer lies in the memory the core holds: its "
                          "program headers do not match its registers, so no stack can be "
                          "unwound",
                          core_->name())
            : fmt::format("{}: {} of {} threads have a stack pointer outside the memory the "
                          "core holds: their stacks cannot be unwound",
                          core_->name(), outside, all),
        core_->truncated() ? "the core is incomplete; take it again with enough disk space "
                             "and `ulimit -c unlimited`"
                           : "the core is damaged; take it again");
  }

  void load_initial_stack() {
    if (stack_loaded_) return;
    stack_loaded_ = true;
    auto execfn = core_->auxv_value(AT_EXECFN);
    if (!execfn) return;
    for (const auto& m : maps_) {
      if (m.contains(*execfn)) {
        stack_ = read_initial_stack(memory_, m.start, m.end, core_->auxv());
        return;
      }
    }
  }

  static std::vector<std::string> split_args(const std::string& s) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < s.size()) {
      std::size_t j = s.find(' ', i);
      if (j == std::string::npos) j = s.size();
      if (j > i) out.push_back(s.substr(i, j - i));
      i = j + 1;
    }
    return out;
  }

  std::unique_ptr<CoreFile> core_;
  CoreOpenOptions opts_;
  std::vector<Mapping> maps_;
  CoreModules modules_;
  CoreMemory memory_;
  std::string exe_core_path_;
  std::optional<int> crashed_tid_;
  bool stack_loaded_ = false;
  std::optional<InitialStack> stack_;
};

}  // namespace

std::optional<int> crashed_thread(const CoreFile& core) {
  if (core.threads().empty() || core.threads().front().cursig == 0) return std::nullopt;
  return core.threads().front().tid;
}

std::optional<SignalInfo> fatal_signal(const CoreFile& core) {
  if (!crashed_thread(core)) return std::nullopt;
  int sig = core.threads().front().cursig;
  if (const auto& si = core.siginfo(); si && si->signo == sig) {
    return SignalInfo{si->signo, signal_name(si->signo), si->address, si->code, si->sender_pid};
  }
  return SignalInfo{sig, signal_name(sig), std::nullopt, 0, std::nullopt};
}

Result<std::unique_ptr<Target>> open_core_target(const std::string& core_path,
                                                 const CoreOpenOptions& opts) {
  auto core = CoreFile::open(core_path);
  if (!core) return std::move(core).error();
  return make_core_target(std::move(core).value(), opts);
}

std::unique_ptr<Target> make_core_target(std::unique_ptr<CoreFile> core,
                                         const CoreOpenOptions& opts) {
  return std::make_unique<CoreTarget>(std::move(core), opts);
}

}  // namespace hangscan
