#include "doctor/doctor.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "corewrite/core_plan.h"
#include "proc/container_info.h"
#include "proc/proc_facts.h"
#include "proc/proc_files.h"
#include "util/hints.h"
#include "util/parse_number.h"
#include "util/safe_output.h"

namespace hangscan {
namespace {

using Level = DoctorCheck::Level;

std::string slurp(const std::string& path) {
  auto t = read_text_file(path, 1 << 20);
  if (!t) return {};
  std::string s = std::move(*t);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

class Doctor {
 public:
  explicit Doctor(const DoctorOptions& o) : o_(o) {}

  std::vector<DoctorCheck> run() {
    check_ptrace();
    check_core_pattern();
    check_core_limit();
    check_coredump_filter();
    check_core_dir();
    check_disk();
    check_python_symbols();
    return std::move(out_);
  }

 private:
  void add(Level l, std::string name, std::string finding, std::string fix = {}) {
    out_.push_back(DoctorCheck{l, std::move(name), std::move(finding), std::move(fix)});
  }
  std::string proc(const char* what) const {
    return o_.pid ? fmt::format("/proc/{}/{}", *o_.pid, what) : fmt::format("/proc/self/{}", what);
  }

  void check_ptrace() {
    const PtraceStanding standing = read_ptrace_standing();
    const bool cap = standing.cap_sys_ptrace;
    const bool container = standing.in_container;
    std::string scope_text = slurp("/proc/sys/kernel/yama/ptrace_scope");
    int scope = parse_int<int>(scope_text).value_or(-1);
    std::string where = container ? " (in a container)" : "";
    const std::string container_fix =
        container && !cap ? fmt::format("; in this container: {}", hints::container_ptrace()) : "";
    if (scope == 3) {
      add(Level::fail, "ptrace", "kernel.yama.ptrace_scope=3: ptrace is disabled for everyone",
          "only a reboot lifts scope 3; set kernel.yama.ptrace_scope=1 in /etc/sysctl.d and "
          "reboot");
      return;
    }
    if ((scope == 1 || scope == 2) && !cap) {
      add(o_.pid ? Level::fail : Level::warn, "ptrace",
          fmt::format("kernel.yama.ptrace_scope={} and hangscan has no CAP_SYS_PTRACE{}: it may "
                      "only trace its own children",
                      scope, where),
          fmt::format("run hangscan as root (sudo), or 'sysctl -w kernel.yama.ptrace_scope=0'{}",
                      container_fix));
      return;
    }
    if (!o_.pid && container && !cap) {
      add(Level::warn, "ptrace",
          "hangscan runs in a container without CAP_SYS_PTRACE (CapEff of its own process): "
          "only processes of its own user can be traced",
          hints::container_ptrace());
      return;
    }
    if (!o_.pid) {
      add(Level::ok, "ptrace",
          fmt::format(
              "{}{}{}",
              scope < 0 ? "no Yama LSM" : fmt::format("kernel.yama.ptrace_scope={}", scope),
              cap ? ", CAP_SYS_PTRACE held" : ", no CAP_SYS_PTRACE: same-user processes only",
              where));
      return;
    }
    const int pid = *o_.pid;
    std::string target = slurp(proc("status"));
    if (target.empty()) {
      add(Level::fail, "ptrace", fmt::format("pid {}: no such process", pid),
          "check the pid with 'ps -p PID'");
      return;
    }
    int tracer = parse_int<int>(status_field(target, "TracerPid").value_or("0")).value_or(0);
    if (tracer != 0) {
      add(Level::fail, "ptrace",
          fmt::format("pid {} is already traced by pid {} ({})", pid, tracer,
                      read_comm(tracer, tracer)),
          "detach the other tracer (gdb, strace, py-spy); a process has one tracer at a time");
      return;
    }
    const unsigned me = geteuid();
    unsigned owner = parse_int<unsigned>(status_field(target, "Uid").value_or("0")).value_or(0);
    // process_vm_readv performs the same access check as PTRACE_ATTACH without stopping
    // anything: EPERM means refused, EFAULT (address 1 is never mapped) means allowed.
    char byte = 0;
    iovec local{&byte, 1};
    iovec remote{reinterpret_cast<void*>(1), 1};
    errno = 0;
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    bool refused = n < 0 && (errno == EPERM || errno == EACCES);
    if (refused || (!cap && me != owner)) {
      std::string why =
          !cap && me != owner
              ? fmt::format("hangscan runs as uid {} and pid {} belongs to uid {}", me, pid, owner)
              : "the kernel refuses access";
      add(Level::fail, "ptrace", fmt::format("pid {} cannot be traced: {}", pid, why),
          fmt::format("run hangscan as uid {} (the process's user) or as root (sudo){}", owner,
                      container_fix));
      return;
    }
    add(Level::ok, "ptrace",
        fmt::format("pid {} can be traced (uid {}{})", pid, me, cap ? ", CAP_SYS_PTRACE" : ""));
  }

  // Where the kernel's cores go; for a path, whether that directory takes them.
  void check_core_pattern() {
    std::string pattern = slurp("/proc/sys/kernel/core_pattern");
    if (pattern.empty()) {
      add(Level::warn, "core pattern", "kernel.core_pattern is unreadable");
      return;
    }
    if (pattern[0] == '|') {
      std::string handler = pattern.substr(1, pattern.find(' ') - 1);
      if (pattern.find("systemd-coredump") != std::string::npos) {
        std::string conf = slurp("/etc/systemd/coredump.conf");
        std::string max = "2G (default)";
        std::istringstream in(conf);
        for (std::string line; std::getline(in, line);) {
          if (line.starts_with("ProcessSizeMax=")) max = line.substr(15);
          if (line.starts_with("Storage=none")) {
            add(Level::fail, "core pattern",
                "cores go to systemd-coredump with Storage=none: none are kept",
                "set Storage=external in /etc/systemd/coredump.conf, or use 'hangscan gcore'");
            return;
          }
        }
        add(Level::ok, "core pattern",
            fmt::format("cores are piped to systemd-coredump (ProcessSizeMax={}); bigger "
                        "processes get no core; 'coredumpctl list' shows them",
                        max),
            "");
        return;
      }
      if (pattern.find("apport") != std::string::npos) {
        add(Level::warn, "core pattern",
            "cores are piped to apport, which keeps only cores of packaged programs (not "
            "python scripts or your builds by default)",
            "sysctl -w kernel.core_pattern=/var/tmp/core.%e.%p, or use 'hangscan gcore'");
        return;
      }
      add(Level::ok, "core pattern", fmt::format("cores are piped to {}", handler));
      return;
    }
    std::string dir = ".";
    auto slash = pattern.rfind('/');
    if (slash != std::string::npos) {
      dir = slash == 0 ? "/" : pattern.substr(0, slash);
    } else if (o_.pid) {
      if (auto cwd = read_link(proc("cwd"))) dir = std::move(*cwd);
    }
    core_dir_ = dir;
    if (dir.find('%') != std::string::npos) {
      add(Level::ok, "core pattern", fmt::format("cores are written as {}", pattern));
      return;
    }
    if (!exists(dir)) {
      add(Level::fail, "core pattern",
          fmt::format("cores go to {} ({}), which does not exist", dir, pattern),
          fmt::format("mkdir -p {} (world-writable with sticky bit), or change kernel.core_pattern",
                      dir));
      return;
    }
    if (access(dir.c_str(), W_OK) != 0) {
      add(Level::fail, "core pattern",
          fmt::format("cores go to {} ({}), which is not writable", dir, pattern),
          "sysctl -w kernel.core_pattern=/var/tmp/core.%e.%p (a writable directory)");
      return;
    }
    add(Level::ok, "core pattern",
        fmt::format("kernel cores are written to {} as '{}'", dir, pattern));
  }

  // `hangscan gcore -o DIR` refuses a directory another user controls (util/safe_output.h):
  // said here before a core is needed. Nothing is shown when the directory is fine.
  void check_core_dir() {
    if (o_.core_dir.empty()) return;
    auto dir = OutputDir::open(o_.core_dir, {"-o", false, 0700});
    if (!dir && dir.error().code == Errc::permission)
      add(Level::fail, "core directory", dir.error().what(), dir.error().hint);
  }

  void check_core_limit() {
    auto limit = parse_core_limit(slurp(proc("limits")));
    std::string who = o_.pid ? fmt::format("pid {}", *o_.pid) : "this shell";
    if (!limit) {
      add(Level::warn, "core limit", fmt::format("{}: core size limit unknown", who));
      return;
    }
    if (*limit == 0) {
      add(o_.pid ? Level::fail : Level::warn, "core limit",
          fmt::format(
              "{} has 'Max core file size' 0 (ulimit -c 0): the kernel writes no core on a crash",
              who),
          o_.pid ? fmt::format("prlimit --pid {} --core=unlimited (or 'ulimit -c unlimited' before "
                               "starting the job); 'hangscan gcore' needs no limit",
                               *o_.pid)
                 : "'ulimit -c unlimited' in the job script before the program starts");
      return;
    }
    add(Level::ok, "core limit",
        fmt::format("{}: core size limit {}", who,
                    *limit == UINT64_MAX ? "unlimited" : human_size(*limit)));
  }

  void check_coredump_filter() {
    if (!o_.pid) return;
    auto f = parse_coredump_filter(slurp(proc("coredump_filter")));
    if (!f) return;
    if ((*f & 1u) == 0) {
      add(Level::fail, "coredump_filter",
          fmt::format("{:#x}: anonymous private memory (heap, thread stacks) is not dumped; "
                      "cores would have no stacks",
                      *f),
          fmt::format("echo 0x33 > /proc/{}/coredump_filter", *o_.pid));
      return;
    }
    add(Level::ok, "coredump_filter",
        fmt::format("{:#x}{}", *f,
                    *f == 0x33 ? " (the default: anonymous memory and ELF headers)" : ""));
  }

  void check_disk() {
    std::uint64_t rss = 0;
    if (o_.pid) {
      if (auto v = status_field(slurp(proc("status")), "VmRSS"))
        rss = parse_int<std::uint64_t>(*v).value_or(0) * 1024;
    }
    for (const auto& [what, dir] :
         {std::pair<std::string, std::string>{"hangscan gcore", o_.core_dir},
          {"kernel cores", core_dir_}}) {
      if (dir.empty()) continue;
      struct statvfs vs {};
      if (statvfs(dir.c_str(), &vs) != 0) continue;
      std::uint64_t free_bytes = static_cast<std::uint64_t>(vs.f_bavail) * vs.f_frsize;
      std::uint64_t need =
          what == "hangscan gcore" ? std::min<std::uint64_t>(rss, 256ull << 20) : rss;
      std::string finding = fmt::format("{} free in {} ({})", human_size(free_bytes), dir, what);
      if (rss > 0) finding += fmt::format("; the target's RSS is {}", human_size(rss));
      if (need > 0 && free_bytes < need) {
        add(Level::fail, "disk", finding + ": not enough for its core",
            "free space there or choose another directory (-o DIR / kernel.core_pattern)");
      } else {
        add(Level::ok, "disk", finding);
      }
    }
  }

  void check_python_symbols() {
    if (!o_.pid) return;
    auto link = read_link(proc("exe"));
    if (!link) return;
    const std::string& exe = *link;
    auto base = exe.substr(exe.rfind('/') + 1);
    if (!base.starts_with("python")) return;
    std::string id = build_id(exe);
    bool have = !id.empty() && exists(fmt::format("/usr/lib/debug/.build-id/{}/{}.debug",
                                                  id.substr(0, 2), id.substr(2)));
    std::string version = base.size() > 6 ? base.substr(6) : "3";
    if (have) {
      add(Level::ok, "python symbols", fmt::format("debug symbols for {} are installed", exe));
    } else {
      add(Level::warn, "python symbols",
          fmt::format("no debug symbols for {}: hangscan reads Python frames without them, "
                      "but gdb's py-bt and native frame names inside the interpreter need them",
                      exe),
          fmt::format("apt install python{}-dbg (Debian/Ubuntu) or dnf debuginfo-install python3",
                      version));
    }
  }

  // GNU build-id of an ELF file from its PT_NOTE segments; "" when none.
  static std::string build_id(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    Elf64_Ehdr eh{};
    if (!f.read(reinterpret_cast<char*>(&eh), sizeof(eh)) ||
        std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
      return {};
    for (unsigned i = 0; i < eh.e_phnum && i < 256; ++i) {
      Elf64_Phdr ph{};
      f.seekg(static_cast<std::streamoff>(eh.e_phoff + i * sizeof(ph)));
      if (!f.read(reinterpret_cast<char*>(&ph), sizeof(ph))) return {};
      if (ph.p_type != PT_NOTE || ph.p_filesz > (1 << 16)) continue;
      std::string notes(ph.p_filesz, '\0');
      f.seekg(static_cast<std::streamoff>(ph.p_offset));
      if (!f.read(notes.data(), static_cast<std::streamsize>(notes.size()))) continue;
      for (std::size_t at = 0; at + 12 <= notes.size();) {
        std::uint32_t nsz, dsz, type;
        std::memcpy(&nsz, notes.data() + at, 4);
        std::memcpy(&dsz, notes.data() + at + 4, 4);
        std::memcpy(&type, notes.data() + at + 8, 4);
        std::size_t desc = at + 12 + ((nsz + 3) & ~3u);
        if (desc + dsz > notes.size()) break;
        if (type == NT_GNU_BUILD_ID && nsz == 4 && notes.compare(at + 12, 3, "GNU") == 0) {
          std::string hex;
          for (std::size_t k = 0; k < dsz; ++k)
            hex += fmt::format("{:02x}", static_cast<unsigned char>(notes[desc + k]));
          return hex;
        }
        at = desc + ((dsz + 3) & ~3u);
      }
    }
    return {};
  }

  const DoctorOptions& o_;
  std::vector<DoctorCheck> out_;
  std::string core_dir_;
};

}  // namespace

std::vector<DoctorCheck> run_doctor(const DoctorOptions& opts) { return Doctor(opts).run(); }

const char* doctor_level_name(DoctorCheck::Level level) {
  switch (level) {
    case DoctorCheck::Level::ok:
      return "ok  ";
    case DoctorCheck::Level::warn:
      return "WARN";
    case DoctorCheck::Level::fail:
      return "FAIL";
  }
  return "?";
}

}  // namespace hangscan
