// Order of work, to keep the pause short: everything that does not need a stopped target
// (process facts, the environment, locating the interpreter, creating the file) happens
// before the freeze; while stopped: registers, the Python walk, the memory map and the copy.
#include "corewrite/core_writer.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "corewrite/core_plan.h"
#include "corewrite/elf_core_writer.h"
#include "corewrite/read_recorder.h"
#include "discovery/discovery.h"
#include "discovery/environ_memory.h"
#include "proc/proc_facts.h"
#include "proc/proc_files.h"
#include "python/python_reader.h"
#include "target/exec_watch.h"
#include "target/live_target.h"
#include "util/hints.h"
#include "util/parse_number.h"
#include "util/safe_output.h"

namespace hangscan {
namespace {

// Thread control blocks (fs_base) and the TLS below them: libthread_db (gdb) and the
// Python thread matching read them.
constexpr std::uint64_t kTlsBelow = 64 * 1024;
constexpr std::uint64_t kTcbAbove = 4096;

std::string proc_path(int pid, const char* what) { return fmt::format("/proc/{}/{}", pid, what); }

std::string read_or_empty(const std::string& path, std::size_t max = 1 << 22) {
  auto t = read_text_file(path, max);
  return t ? std::move(*t) : std::string();
}

CoreProcessInfo process_info(int pid) {
  CoreProcessInfo info;
  info.pid = pid;
  if (auto s = parse_stat_facts(read_or_empty(proc_path(pid, "stat")))) {
    info.state = s->state;
    info.ppid = s->ppid;
    info.pgrp = s->pgrp;
    info.sid = s->sid;
    info.nice = s->nice;
  }
  std::string status = read_or_empty(proc_path(pid, "status"));
  if (auto uid = status_field(status, "Uid")) info.uid = parse_int<unsigned>(*uid).value_or(0);
  if (auto gid = status_field(status, "Gid")) info.gid = parse_int<unsigned>(*gid).value_or(0);
  info.comm = read_comm(pid, pid);
  std::string cmd = read_or_empty(proc_path(pid, "cmdline"), 4096);
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  info.psargs = cmd;
  std::string auxv = read_or_empty(proc_path(pid, "auxv"), 1 << 16);
  info.auxv.assign(auxv.begin(), auxv.end());
  return info;
}

CoreThreadState thread_state(int pid, int tid, const Registers& regs) {
  CoreThreadState t;
  t.tid = tid;
  t.regs = regs;
  std::string status = read_or_empty(fmt::format("/proc/{}/task/{}/status", pid, tid));
  t.sigpend = status_hex(status, "SigPnd");
  t.sighold = status_hex(status, "SigBlk");
  auto tick_us = 1000000 / static_cast<std::uint64_t>(std::max(1L, sysconf(_SC_CLK_TCK)));
  if (auto s = parse_stat_facts(read_or_empty(fmt::format("/proc/{}/task/{}/stat", pid, tid)))) {
    t.utime_us = s->utime_ticks * tick_us;
    t.stime_us = s->stime_ticks * tick_us;
  }
  // We are the tracer while the freeze lasts, so the FPU state is ours to read.
  user_fpregs_struct fp{};
  if (ptrace(PTRACE_GETFPREGS, tid, nullptr, &fp) == 0) t.fpregs = fp;
  return t;
}

std::uint64_t auxv_value(const std::vector<std::uint8_t>& auxv, std::uint64_t type) {
  for (std::size_t at = 0; at + 16 <= auxv.size(); at += 16) {
    std::uint64_t k, v;
    std::memcpy(&k, auxv.data() + at, 8);
    std::memcpy(&v, auxv.data() + at + 8, 8);
    if (k == type) return v;
  }
  return 0;
}

// The memory map as it is while stopped, with smaps facts (read before the freeze: smaps
// walks the page tables, tens of milliseconds for GiBs) and ELF magic of file images.
void read_layout(Target& target, const std::map<std::uint64_t, MappingFacts>& smaps,
                 PlanInput& in) {
  const int pid = target.pid();
  in.mappings = parse_maps(read_or_empty(proc_path(pid, "maps"), 1 << 26));
  in.facts.resize(in.mappings.size());
  for (std::size_t i = 0; i < in.mappings.size(); ++i) {
    const Mapping& m = in.mappings[i];
    if (auto it = smaps.find(m.start); it != smaps.end()) in.facts[i] = it->second;
    if (m.is_file() && m.offset == 0 && m.readable() && !in.facts[i].io) {
      char magic[SELFMAG] = {};
      in.facts[i].elf_magic = target.memory().read(m.start, magic, SELFMAG) == SELFMAG &&
                              std::memcmp(magic, ELFMAG, SELFMAG) == 0;
    }
  }
  if (auto f = parse_coredump_filter(read_or_empty(proc_path(pid, "coredump_filter")))) {
    in.coredump_filter = *f;
  }
}

// The hidden file a core is written to: closed, and removed unless it was published.
class FileGuard {
 public:
  FileGuard(const OutputDir& dir, int fd, std::string name)
      : dir_(dir), fd_(fd), name_(std::move(name)) {}
  ~FileGuard() {
    if (fd_ >= 0) ::close(fd_);
    if (!keep_) dir_.remove(name_);
  }
  FileGuard(const FileGuard&) = delete;
  FileGuard& operator=(const FileGuard&) = delete;
  int fd() const { return fd_; }
  void keep() { keep_ = true; }

 private:
  const OutputDir& dir_;
  int fd_;
  std::string name_;
  bool keep_ = false;
};

Error already_there(const std::string& path, const std::string& option) {
  return Error(Errc::io, fmt::format("cannot create {}: {}", path, std::strerror(EEXIST)), EEXIST,
               hints::core_already_there(option));
}

// Gives the complete core its name, never replacing anything already there (a planted link
// included): OutputDir::publish links, or renames without replacing.
Status publish(const OutputDir& dir, const std::string& partial, const std::string& name,
               const std::string& option) {
  auto st = dir.publish(partial, name);
  if (st) return Ok{};
  if (st.error().sys_errno == EEXIST) return already_there(dir.path_of(name), option);
  Error e = std::move(st).error();
  e.hint = hints::writable_core_dir(option);
  return e;
}

}  // namespace

std::string core_file_name(const std::string& host, std::optional<int> rank, int pid) {
  if (rank) return fmt::format("core.{}.rank{}.{}", host, *rank, pid);
  return fmt::format("core.{}.{}", host, pid);
}

Result<CoreWriteResult> write_core_detailed(int pid, const CoreWriteOptions& opts) {
  auto opened = open_live_target(pid);
  if (!opened) return std::move(opened).error();
  Target& target = **opened;
  CoreWriteResult res;
  CoreProcessInfo info = process_info(pid);

  // Before the freeze: the environment (for the rank, and so that its pages are kept) and
  // the interpreter's location.
  RecordingTarget recorder(target);
  res.rank = opts.rank;
  auto env = read_environment(recorder);
  if (!res.rank) {
    ProcessSnapshot snap;
    apply_rank_info(snap, env);
    res.rank = snap.rank;
  }
  std::unique_ptr<python::PythonReader> py;
  if (opts.python) {
    auto located = python::PythonReader::locate(recorder, nullptr);
    if (located) {
      py = std::move(*located);
      res.python_version = py->version();
    } else if (located.error().code != Errc::not_found) {
      res.warnings.push_back(fmt::format("Python frames not kept: {}", located.error().what()));
    }
  }

  std::string host = opts.host.empty() ? local_host_name() : opts.host;
  OutputDirOptions where{opts.dir_option, opts.create_dir, 0700};
  auto dir = OutputDir::open(opts.dir.empty() ? "." : opts.dir, where);
  if (!dir) return std::move(dir).error();
  const std::string name = core_file_name(host, res.rank, pid);
  res.path = dir->path_of(name);
  // The core is written under a hidden name and gets its own name only once complete, so a
  // writer killed mid-way (SIGKILL, a full disk's SIGXFSZ) never leaves a truncated file
  // that looks like a core.
  if (dir->has(name)) return already_there(res.path, opts.dir_option);
  const std::string partial = fmt::format(".{}.partial-{}", name, ::getpid());
  auto fd = dir->create_new(partial, 0600);
  if (!fd) {
    Error e = std::move(fd).error();
    e.hint = hints::writable_core_dir(opts.dir_option);
    return e;
  }
  FileGuard file(*dir, *fd, partial);

  auto smaps = parse_smaps(read_or_empty(proc_path(pid, "smaps"), 1 << 28));
  const auto before = exec_mark(pid);  // names the program of an exec during the freeze
  auto freeze = target.freeze(Deadline::after(opts.freeze_timeout));
  if (!freeze) return std::move(freeze).error();
  if ((*freeze)->executed()) {  // its threads are the old program's
    (*freeze)->release();       // the exec completes once its killed tracees are reaped
    return exec_error(pid, before);
  }
  PlanInput in;
  in.max_size = opts.max_size;
  for (const auto& ft : (*freeze)->threads()) {
    if (!ft.regs) {
      res.warnings.push_back(fmt::format("thread {} left out of the core: {}", ft.tid, ft.error));
      continue;
    }
    info.threads.push_back(thread_state(pid, ft.tid, *ft.regs));
    in.stack_pointers.push_back(ft.regs->sp());
    std::uint64_t fs = ft.regs->fs_base();
    if (fs != 0) in.keep_ranges.emplace_back(fs > kTlsBelow ? fs - kTlsBelow : 0, fs + kTcbAbove);
  }
  if (info.threads.empty()) {
    return Error(Errc::io, fmt::format("pid {}: no thread could be stopped", pid), 0,
                 "the process may be in uninterruptible sleep (D state); try again later");
  }
  std::stable_partition(info.threads.begin(), info.threads.end(),
                        [pid](const CoreThreadState& t) { return t.tid == pid; });
  if (py) {
    RecordingMemory mem(target.memory());
    auto raw = py->walk(mem, false);
    (void)py->decode(raw, mem);
    in.keep_ranges.insert(in.keep_ranges.end(), mem.ranges().begin(), mem.ranges().end());
  }
  in.keep_ranges.insert(in.keep_ranges.end(), recorder.ranges().begin(), recorder.ranges().end());
  read_layout(target, smaps, in);
  in.vdso = auxv_value(info.auxv, AT_SYSINFO_EHDR);
  info.mappings = in.mappings;
  CorePlan plan = plan_core(in);
  auto stats = write_elf_core(file.fd(), info, plan, target.memory());
  const bool executed = (*freeze)->executed();
  const std::string died = (*freeze)->death();
  res.pause_us = (*freeze)->release();
  // A core of a process that replaced its program while written mixes two programs: removed too.
  if (executed) return exec_error(pid, before);
  // Memory read after a death is missing: such a core would look complete to every reader
  // but hold holes where stacks should be. It never gets a core's name (the guard removes it).
  if (!died.empty()) {
    return Error(
        Errc::no_such_process,
        fmt::format("pid {} {} while its core was being written: no core was written", pid, died),
        0, "the process is gone; the kernel log (dmesg) says whether the OOM killer ended it");
  }
  if (!stats) return std::move(stats).error();

  struct stat st {};
  if (::fstat(file.fd(), &st) == 0) {
    res.file_size = static_cast<std::uint64_t>(st.st_size);
    res.disk_bytes = static_cast<std::uint64_t>(st.st_blocks) * 512;
  }
  for (const auto& p : plan.pieces) {
    res.kept_bytes += p.dump;
    if (!p.omitted.empty()) res.omitted_bytes += p.size();
  }
  res.unreadable_bytes = stats->unreadable_bytes;
  res.kept_bytes -= std::min(res.kept_bytes, stats->unreadable_bytes + stats->guard_bytes);
  res.omitted_bytes += stats->guard_bytes;
  res.threads = info.threads.size();
  res.omitted = stats->omitted;
  for (auto& w : plan.warnings) res.warnings.push_back(std::move(w));
  if (stats->unreadable_bytes > 0) {
    res.warnings.push_back(
        fmt::format("{} of memory to keep could not be read: the core has holes there "
                    "(listed as unreadable in its HANGSCAN note)",
                    human_size(stats->unreadable_bytes)));
  }
  auto published = publish(*dir, partial, name, opts.dir_option);
  if (!published) return std::move(published).error();
  file.keep();
  return res;
}

Result<std::string> write_core(int pid, const CoreWriteOptions& opts) {
  auto r = write_core_detailed(pid, opts);
  if (!r) return std::move(r).error();
  return r->path;
}

std::string local_host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == 0) return "localhost";
  return buf;
}

}  // namespace hangscan
