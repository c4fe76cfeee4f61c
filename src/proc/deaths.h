// How the dead died: a zombie's exit status and the kernel log's OOM kills and crashes.
//
// Why: the most common "hang" of a big job is a dead rank; the others wait for it in a
// collective until a timeout hours later. Where everyone is does not say what happened; the
// node still knows: an unreaped child keeps its wait status in /proc/PID/stat, and the kernel
// log records every OOM kill (with the memory cgroup, its limit and the victim's RSS) and every
// segfault. Parsers take text, so they are tested on recorded lines; `explain_deaths` is the
// one place that reads this node's files and fills a JobSnapshot's deaths.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/model.h"

namespace hangscan {

// One /dev/kmsg record: seconds since boot (the kernel log's clock) and the message.
struct KernelRecord {
  double boot_s = 0;
  std::string text;
};
std::vector<KernelRecord> parse_kmsg(std::string_view text);

// A death the kernel log tells of: an OOM kill ("oom-kill", with cgroup, limit and RSS when
// the report has them), a segfault or another trap ("segfault").
struct KernelDeath {
  int pid = 0;
  std::string comm;
  double boot_s = 0;
  std::string oom_memcg;  // the memory cgroup whose limit was hit (a memory cgroup OOM kill)
  Death death;
};
std::vector<KernelDeath> kernel_deaths(const std::vector<KernelRecord>& records);

// What this node's dump saw of the job, against which a kernel-log death is linked. Why: a
// command name and a time window are no evidence (any python3 on the node segfaults in the
// window of a python job); a pid of the job's process tree or the job's memory cgroup are.
struct JobEvidence {
  std::map<int, std::uint64_t> dead;  // dead processes of the tree: pid -> start ticks (0: unknown)
  std::vector<std::string> memory_cgroups;  // the members' memory cgroups (hierarchy-relative)
  std::string slurm_job_id;  // a Slurm job: its cgroups (task/cgroup) are .../job_ID/...
  std::string slurm_node;    // this node's Slurm name (hierarchies "slurm_NODE" of multiple slurmd)
  double ticks_per_s = 100;
};

// How a kernel-log death is linked to the job: its pid is a dead process of the job's tree
// (a member or a zombie descendant, started before the death), or it was killed for the limit
// of a memory cgroup that holds a member (the member's own cgroup or a parent of it), or of the
// Slurm job's own cgroup (a "slurm..." hierarchy with a "job_ID" level: Slurm's task/cgroup
// names it so, and it outlives a step whose processes are all gone). `none`: nothing links it,
// it is not the job's.
enum class DeathLink { none, tree_pid, memory_cgroup, slurm_cgroup };
DeathLink link_kernel_death(const KernelDeath& k, const JobEvidence& e);

// True when `cgroup` is Slurm job `job_id`'s or below it: a "job_ID" level under a "slurm..."
// one (v1 /slurm/uid_0/job_42/step_0, /slurm_n2/...; v2 /system.slice/slurmstepd.scope/job_42).
// A "slurm_NAME" level (several slurmd on one host) must name `node` when `node` is given.
bool in_slurm_job_cgroup(std::string_view cgroup, std::string_view job_id,
                         std::string_view node = {});

// The memory cgroup of a /proc/PID/cgroup text: the v1 "memory" line, else the v2 "0::" line;
// empty when neither is there.
std::string memory_cgroup_of(std::string_view proc_cgroup_text);

// The note for deaths in the job's window that nothing links to it: "2 other processes died on
// this node during the job's window (not linked to the job): pid 7 (python3) by SIGSEGV, ...".
std::string unlinked_deaths_note(const std::vector<KernelDeath>& unlinked);

// A wait status (/proc/PID/stat field 52 of a zombie) as a death: killed by a signal (core
// dumped or not) or exited with a code.
Death death_from_wait_status(int status);

// Field 52 (exit_code) of /proc/PID/stat; nullopt when absent or malformed.
std::optional<int> parse_stat_exit_code(std::string_view stat_text);

// Where a core of process `comm`/`pid` went by kernel.core_pattern: "piped to systemd-coredump
// (coredumpctl info PID)", or the file path (relative to the process's working directory when
// the pattern is relative); empty when no core can be named.
std::string core_destination(std::string_view core_pattern, int pid, const std::string& comm);

// A Slurm job's identity on a node that may hold none of its processes any more.
struct SlurmDeathScope {
  std::string job_id;
  std::optional<double> start;  // the job's StartTime, Unix seconds
};

// Fills `death` of this node's zombies and dead processes of `job` (host `host`), and adds to
// job.deaths the kernel log's deaths since the job's oldest process started (or the Slurm job's
// start) that link_kernel_death links to the job and that no process of the report is; the
// others make one info diagnostic (unlinked_deaths_note). Reads /proc/PID/stat,
// /proc/PID/cgroup, the process tree, /dev/kmsg (root; else nothing from the log) and
// kernel.core_pattern.
void explain_deaths(JobSnapshot& job, const std::string& host, const SlurmDeathScope& slurm = {});

}  // namespace hangscan
