#include "proc/deaths.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "proc/gpu_xid.h"
#include "proc/memory_usage.h"
#include "proc/proc_files.h"
#include "proc/process_tree.h"
#include "util/diagnostic.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

constexpr std::size_t kMaxKmsgBytes = 8 << 20;

template <class T>
std::optional<T> number(std::string_view s) {
  // Untrimmed: a field with spaces around it is not a number here.
  if (s.size() > 24 || trim_space(s).size() != s.size()) return std::nullopt;
  return parse_int<T>(s);
}

// The digits right after `key` in `text` ("anon-rss:" -> 212608).
std::optional<std::uint64_t> number_after(std::string_view text, std::string_view key) {
  auto at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t i = at + key.size(), j = i;
  while (j < text.size() && j - i < 20 && text[j] >= '0' && text[j] <= '9') ++j;
  return number<std::uint64_t>(text.substr(i, j - i));
}

// "key=value" up to the next comma.
std::string field_after(std::string_view text, std::string_view key) {
  auto at = text.find(key);
  if (at == std::string_view::npos) return {};
  std::size_t i = at + key.size();
  std::size_t j = text.find(',', i);
  return std::string(text.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
}

std::optional<std::uint64_t> kb(std::optional<std::uint64_t> v) {
  if (!v || *v > (UINT64_MAX >> 10)) return std::nullopt;
  return *v << 10;
}

const char* signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? abbrev : "";
}

// "Killed process 4725 (python3) total-vm:..." -> a death.
std::optional<KernelDeath> oom_kill(std::string_view text, double boot_s) {
  constexpr std::string_view kKilled = "Killed process ";
  auto at = text.find(kKilled);
  bool oom = text.find("out of memory") != std::string_view::npos ||
             text.find("Out of memory") != std::string_view::npos;
  if (at == std::string_view::npos || !oom) return std::nullopt;
  std::string_view rest = text.substr(at + kKilled.size());
  auto sp = rest.find(' ');
  auto pid = number<int>(rest.substr(0, sp));
  if (!pid || sp == std::string_view::npos) return std::nullopt;
  KernelDeath k;
  k.pid = *pid;
  k.boot_s = boot_s;
  auto open = rest.find('(');
  auto close = rest.find(") ");
  if (open != std::string_view::npos && close != std::string_view::npos && close > open) {
    k.comm = std::string(rest.substr(open + 1, close - open - 1));
  }
  k.death.how = "oom-kill";
  k.death.signal = SIGKILL;
  k.death.signal_name = "SIGKILL";
  std::uint64_t rss = 0;
  bool any = false;
  for (std::string_view key : {"anon-rss:", "file-rss:", "shmem-rss:"}) {
    if (auto v = kb(number_after(rest, key))) {
      rss += *v;
      any = true;
    }
  }
  if (any) k.death.rss_bytes = rss;
  k.death.evidence.push_back("kernel log");
  return k;
}

// "python3[13286]: segfault at 0 ip ... in libc.so.6[...]", "traps: python3[123] general
// protection fault ip:..." -> a death.
std::optional<KernelDeath> crash(std::string_view text, double boot_s) {
  std::string_view t = text;
  if (t.substr(0, 7) == "traps: ") t.remove_prefix(7);
  auto open = t.find('[');
  auto close = t.find(']', open == std::string_view::npos ? 0 : open);
  if (open == std::string_view::npos || close == std::string_view::npos || open == 0)
    return std::nullopt;
  auto pid = number<int>(t.substr(open + 1, close - open - 1));
  if (!pid) return std::nullopt;
  std::string_view what = t.substr(close + 1);
  if (!what.empty() && what.front() == ':') what.remove_prefix(1);
  while (!what.empty() && what.front() == ' ') what.remove_prefix(1);
  bool segv = what.substr(0, 9) == "segfault ";
  bool trap = text.substr(0, 7) == "traps: ";
  if (!segv && !trap) return std::nullopt;
  KernelDeath k;
  k.pid = *pid;
  k.comm = std::string(t.substr(0, open));
  k.boot_s = boot_s;
  k.death.how = "segfault";
  if (segv) {
    k.death.signal = SIGSEGV;
    k.death.signal_name = "SIGSEGV";
  }
  // "segfault at 0 ip 00007f.. sp 00007ff.. error 4 in libc.so.6[7f..+1a000] likely on CPU 1"
  std::string detail(what.substr(0, std::min<std::size_t>(what.size(), 200)));
  auto likely = detail.find(" likely on CPU");
  if (likely != std::string::npos) detail.erase(likely);
  k.death.detail = detail;
  k.death.evidence.push_back("kernel log");
  return k;
}

double wall_from_boot(double boot_s) {
  timespec mono{}, real{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  double now_mono = static_cast<double>(mono.tv_sec) + static_cast<double>(mono.tv_nsec) / 1e9;
  double now_real = static_cast<double>(real.tv_sec) + static_cast<double>(real.tv_nsec) / 1e9;
  return now_real - (now_mono - boot_s);
}

std::vector<KernelRecord> read_kernel_log() {
  int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  std::string all;
  char buf[8192];
  while (all.size() < kMaxKmsgBytes) {
    ssize_t n = ::read(fd, buf, sizeof(buf));  // one record per read
    if (n < 0 && errno == EPIPE) continue;     // overwritten while we read: skip on
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: the end
    all.append(buf, static_cast<std::size_t>(n));
    if (all.back() != '\n') all += '\n';
  }
  ::close(fd);
  return parse_kmsg(all);
}

}  // namespace

std::vector<KernelRecord> parse_kmsg(std::string_view text) {
  std::vector<KernelRecord> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty() || line.front() == ' ') continue;  // dictionary continuation lines
    auto semi = line.find(';');
    if (semi == std::string_view::npos) continue;
    std::string_view head = line.substr(0, semi);
    // PRI,SEQ,USEC,FLAGS[,...]
    std::size_t c1 = head.find(','),
                c2 = c1 == std::string_view::npos ? c1 : head.find(',', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::size_t c3 = head.find(',', c2 + 1);
    auto usec = number<std::uint64_t>(
        head.substr(c2 + 1, c3 == std::string_view::npos ? std::string_view::npos : c3 - c2 - 1));
    if (!usec) continue;
    out.push_back({static_cast<double>(*usec) / 1e6, std::string(line.substr(semi + 1))});
  }
  return out;
}

std::vector<KernelDeath> kernel_deaths(const std::vector<KernelRecord>& records) {
  std::vector<KernelDeath> out;
  std::optional<std::uint64_t> limit;  // last "memory: usage ..., limit ..." of an OOM report
  std::string memcg;                   // last "oom-kill:...oom_memcg=..."
  int memcg_pid = 0;
  for (const KernelRecord& r : records) {
    std::string_view t = r.text;
    if (t.substr(0, 8) == "memory: " && t.find("limit ") != std::string_view::npos) {
      limit = kb(number_after(t, "limit "));
    } else if (t.substr(0, 9) == "oom-kill:") {
      memcg = field_after(t, "oom_memcg=");
      memcg_pid = number<int>(field_after(t, ",pid=")).value_or(0);
      if (t.find("CONSTRAINT_MEMCG") == std::string_view::npos) limit.reset();
    } else if (auto k = oom_kill(t, r.boot_s)) {
      if (memcg_pid == k->pid && t.find("Memory cgroup") != std::string_view::npos) {
        k->death.cgroup = memcg;
        k->oom_memcg = memcg;
        k->death.limit_bytes = limit;
      }
      out.push_back(std::move(*k));
      limit.reset();
      memcg.clear();
      memcg_pid = 0;
    } else if (auto c = crash(t, r.boot_s)) {
      out.push_back(std::move(*c));
    }
  }
  return out;
}

Death death_from_wait_status(int status) {
  Death d;
  if (WIFSIGNALED(status)) {
    d.how = "killed";
    d.signal = WTERMSIG(status);
    d.signal_name = signal_name(*d.signal);
    if (!d.signal_name.empty()) d.signal_name = "SIG" + d.signal_name;
    d.core_dumped = WCOREDUMP(status);
  } else {
    d.how = "exited";
    d.exit_code = WEXITSTATUS(status);
  }
  d.evidence.push_back("exit status (/proc/PID/stat)");
  return d;
}

std::optional<int> parse_stat_exit_code(std::string_view text) {
  auto close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(close + 1);
  // Fields after the comm start at field 3; exit_code is field 52.
  int field = 2;
  std::size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    std::size_t j = i;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != '\n') ++j;
    if (j == i) break;
    if (++field == 52) return number<int>(rest.substr(i, j - i));
    i = j;
  }
  return std::nullopt;
}

std::string core_destination(std::string_view pattern, int pid, const std::string& comm) {
  while (!pattern.empty() && (pattern.back() == '\n' || pattern.back() == ' '))
    pattern.remove_suffix(1);
  if (pattern.empty()) return {};
  if (pattern.front() == '|') {
    if (pattern.find("systemd-coredump") != std::string_view::npos) {
      return fmt::format("systemd-coredump (coredumpctl info {})", pid);
    }
    return fmt::format("the program '{}' (kernel.core_pattern)",
                       pattern.substr(1, pattern.find(' ') - 1));
  }
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char c = pattern[++i];
    if (c == '%') out += '%';
    else if (c == 'p' || c == 'P') out += std::to_string(pid);
    else if (c == 'e') out += comm;
    else return fmt::format("'{}' (kernel.core_pattern)", pattern);  // %t, %h, ...: cannot be named
  }
  // The kernel adds ".PID" to a pattern without %p when core_uses_pid is set (the default
  // on many distributions); say so rather than guess.
  return out;
}

namespace {

// A SIGKILL the kernel log does not explain (unreadable, or the record was overwritten): the
// process's memory cgroup may still count an OOM kill.
void add_cgroup_oom_evidence(Death& d, int pid) {
  if (d.how != "killed" || d.signal != SIGKILL) return;
  auto kills = read_cgroup_oom_kills(pid);
  if (!kills) return;
  d.cgroup = kills->cgroup;
  d.detail = fmt::format("its memory cgroup {} counts {} OOM kill{} ({} oom_kill)", kills->cgroup,
                         kills->count, kills->count == 1 ? "" : "s", kills->file);
  d.evidence.push_back(fmt::format("memory cgroup ({})", kills->file));
}

}  // namespace

bool in_slurm_job_cgroup(std::string_view cgroup, std::string_view job_id, std::string_view node) {
  if (job_id.empty()) return false;
  std::string job = fmt::format("/job_{}", job_id);
  for (auto at = cgroup.find(job); at != std::string_view::npos; at = cgroup.find(job, at + 1)) {
    std::size_t end = at + job.size();
    // v1 /slurm/uid_0/job_42, /slurm_n2/uid_0/job_42; v2 /system.slice/slurmstepd.scope/job_42
    auto slurm = cgroup.substr(0, at).find("/slurm");
    if ((end != cgroup.size() && cgroup[end] != '/') || slurm == std::string_view::npos) continue;
    // Several slurmd on one host name their hierarchies "slurm_NODE": another node's is not ours.
    std::string_view level = cgroup.substr(slurm + 1);
    level = level.substr(0, level.find('/'));
    return node.empty() || level.substr(0, 6) != "slurm_" || level.substr(6) == node;
  }
  return false;
}

DeathLink link_kernel_death(const KernelDeath& k, const JobEvidence& e) {
  if (auto d = e.dead.find(k.pid); d != e.dead.end()) {
    // A dead process of the tree that started after this death has the pid of an earlier one.
    if (d->second == 0 || static_cast<double>(d->second) / e.ticks_per_s <= k.boot_s)
      return DeathLink::tree_pid;
  }
  // The root has no limit: a memory cgroup OOM names a real cgroup; a global one names none.
  if (k.oom_memcg.empty() || k.oom_memcg == "/") return DeathLink::none;
  if (in_slurm_job_cgroup(k.oom_memcg, e.slurm_job_id, e.slurm_node))
    return DeathLink::slurm_cgroup;
  for (const std::string& cg : e.memory_cgroups) {
    if (cg == k.oom_memcg ||
        (cg.size() > k.oom_memcg.size() && cg.compare(0, k.oom_memcg.size(), k.oom_memcg) == 0 &&
         cg[k.oom_memcg.size()] == '/')) {
      return DeathLink::memory_cgroup;
    }
  }
  return DeathLink::none;
}

std::string memory_cgroup_of(std::string_view proc_cgroup_text) {
  std::string v2;
  for (const CgroupEntry& e : parse_proc_cgroup(proc_cgroup_text)) {
    if (std::find(e.controllers.begin(), e.controllers.end(), "memory") != e.controllers.end())
      return e.path;
    if (e.controllers.empty()) v2 = e.path;
  }
  return v2;
}

std::string unlinked_deaths_note(const std::vector<KernelDeath>& unlinked) {
  constexpr std::size_t kListed = 5;
  std::string s = fmt::format(
      "{} other process{} died on this node during the job's window (not linked to the job):",
      unlinked.size(), unlinked.size() == 1 ? "" : "es");
  for (std::size_t i = 0; i < unlinked.size() && i < kListed; ++i) {
    const KernelDeath& k = unlinked[i];
    std::string how = k.death.how == "oom-kill"     ? "the OOM killer"
                      : k.death.signal_name.empty() ? "a trap"
                                                    : k.death.signal_name;
    s += fmt::format("{} pid {} ({}) by {}", i ? "," : "", k.pid, k.comm, how);
  }
  if (unlinked.size() > kListed) s += fmt::format(" and {} more", unlinked.size() - kListed);
  return s;
}

namespace {

// The job's tree on this node: its members and every descendant /proc shows now (a zombie is
// listed until its parent reaps it), with the members' memory cgroups.
JobEvidence gather_evidence(const JobSnapshot& job, const std::string& host) {
  JobEvidence e;
  e.ticks_per_s = static_cast<double>(sysconf(_SC_CLK_TCK));
  ProcessTree tree = ProcessTree::scan();
  std::set<int> seen;
  auto add = [&](int pid, char state, std::uint64_t start) {
    if (seen.insert(pid).second && (state == 'Z' || state == 'X')) e.dead[pid] = start;
  };
  for (const ProcessSnapshot& p : job.processes) {
    if ((!host.empty() && !p.host.empty() && p.host != host) || p.core) continue;
    add(p.pid, p.state, p.start_ticks);
    if (auto text = read_text_file(fmt::format("/proc/{}/cgroup", p.pid), 1 << 16)) {
      std::string cg = memory_cgroup_of(*text);
      if (!cg.empty()) e.memory_cgroups.push_back(cg);
    }
    for (int d : tree.descendants(p.pid)) {
      if (const ProcessEntry* pe = tree.find(d)) {
        add(d, pe->state, pe->start_time);
      }
    }
  }
  return e;
}

// A death the kernel log tells of a process of the report: merged with its exit status.
bool merge_into_member(JobSnapshot& job, const std::string& host, const KernelDeath& k) {
  auto owner =
      std::find_if(job.processes.begin(), job.processes.end(), [&](const ProcessSnapshot& p) {
        return p.pid == k.pid && !p.core && (host.empty() || p.host == host || p.host.empty()) &&
               (p.state == 'Z' || p.state == 'X');
      });
  if (owner == job.processes.end()) return false;
  Death merged = k.death;
  if (owner->death) {
    merged.core_dumped = owner->death->core_dumped;
    for (const std::string& e : owner->death->evidence)
      merged.evidence.insert(merged.evidence.begin(), e);
  }
  owner->death = std::move(merged);
  return true;
}

// The GPUs' own error reports of the job's window, one diagnostic for the node; an Xid naming
// a dead process of the report is evidence of its death too.
void note_gpu_errors(JobSnapshot& job, const std::string& host, const std::vector<XidEvent>& xids) {
  if (xids.empty()) return;
  constexpr std::size_t kListed = 5;
  std::string s = xids.size() == 1
                      ? std::string("a GPU error in the job's window: ")
                      : fmt::format("{} GPU errors in the job's window: ", xids.size());
  for (std::size_t i = 0; i < xids.size() && i < kListed; ++i) {
    s += (i ? "; " : "") + xid_words(xids[i]);
    for (ProcessSnapshot& p : job.processes) {
      if (p.death && xids[i].pid == p.pid && (host.empty() || p.host == host || p.host.empty()))
        p.death->evidence.push_back(fmt::format("kernel log (NVIDIA Xid {})", xids[i].xid));
    }
  }
  if (xids.size() > kListed) s += fmt::format("; and {} more", xids.size() - kListed);
  Diagnostic d = make_diagnostic(
      Diagnostic::Severity::warning, std::move(s),
      "NVIDIA's \"Xid Errors\" table says what each code means; 'nvidia-smi -q' on the node "
      "shows the GPU's state now");
  d.host = host;
  job.diagnostics.push_back(std::move(d));
}

void name_cores(JobSnapshot& job) {
  auto pattern = read_text_file("/proc/sys/kernel/core_pattern", 4096);
  auto uses_pid = read_text_file("/proc/sys/kernel/core_uses_pid", 64);
  for (ProcessSnapshot& p : job.processes) {
    if (!p.death) continue;
    if (p.death->core_dumped && pattern) {
      std::string comm = p.death->comm.empty() ? read_comm(p.pid, p.pid) : p.death->comm;
      p.death->core = core_destination(*pattern, p.pid, comm);
      // The kernel appends ".PID" to a file pattern without %p when core_uses_pid is 1.
      bool file = !p.death->core.empty() && p.death->core.find(' ') == std::string::npos;
      if (file && pattern->find("%p") == std::string::npos &&
          pattern->find("%P") == std::string::npos && uses_pid && parse_int<int>(*uses_pid) == 1) {
        p.death->core += fmt::format(".{}", p.pid);
      }
    }
    add_cgroup_oom_evidence(*p.death, p.pid);
  }
}

}  // namespace

void explain_deaths(JobSnapshot& job, const std::string& host, const SlurmDeathScope& slurm) {
  std::uint64_t window_start = UINT64_MAX;
  for (ProcessSnapshot& p : job.processes) {
    if (!host.empty() && !p.host.empty() && p.host != host) continue;
    if (p.core) continue;
    if (p.start_ticks) window_start = std::min(window_start, p.start_ticks);
    if (p.state != 'Z' && p.state != 'X') continue;
    if (auto text = read_text_file(fmt::format("/proc/{}/stat", p.pid), 4096)) {
      if (auto status = parse_stat_exit_code(*text)) {
        p.death = death_from_wait_status(*status);
        p.death->pid = p.pid;
        p.death->host = p.host;
      }
    }
  }
  // A Slurm job whose processes on this node are all gone still has a window: its start.
  std::optional<double> slurm_start_boot_s;
  if (slurm.start) slurm_start_boot_s = *slurm.start - wall_from_boot(0);
  if (window_start == UINT64_MAX && !slurm_start_boot_s) return;
  JobEvidence evidence = gather_evidence(job, host);
  evidence.slurm_job_id = slurm.job_id;
  evidence.slurm_node = host;
  double window_s = window_start == UINT64_MAX
                        ? *slurm_start_boot_s
                        : static_cast<double>(window_start) / evidence.ticks_per_s;
  if (slurm_start_boot_s) window_s = std::min(window_s, *slurm_start_boot_s);
  std::vector<KernelDeath> unlinked;
  std::vector<KernelRecord> records = read_kernel_log();
  note_gpu_errors(job, host, xid_events(records, window_s));
  for (KernelDeath& k : kernel_deaths(records)) {
    if (k.boot_s < window_s) continue;
    k.death.at = wall_from_boot(k.boot_s);
    k.death.pid = k.pid;
    k.death.comm = k.comm;
    k.death.host = host;
    DeathLink link = link_kernel_death(k, evidence);
    if (link == DeathLink::none) {
      unlinked.push_back(std::move(k));
    } else if (!merge_into_member(job, host, k)) {
      job.deaths.push_back(std::move(k.death));
    }
  }
  if (!unlinked.empty()) {
    Diagnostic d = make_diagnostic(
        Diagnostic::Severity::info, unlinked_deaths_note(unlinked),
        "a kernel-log death is the job's only when its pid is in the job's process tree or its OOM "
        "kill is for a memory cgroup that holds the job (docs/troubleshooting.md)");
    d.host = host;
    job.diagnostics.push_back(std::move(d));
  }
  name_cores(job);
}

}  // namespace hangscan
