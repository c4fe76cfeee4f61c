// Discovery: which local processes `hangscan dump` captures, and what each one is.
//
// Why: the CLI takes pids, "a launcher and everything under it" or a command-line pattern,
// and the report needs each process's role (rank, launcher, helper) before grouping, so that
// a resource tracker or a dataloader worker is never counted as a rank. Discovery settles the
// set once, with a diagnostic for everything it leaves out (kernel threads, hangscan itself).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hangscan/model.h"
#include "hangscan/result.h"
#include "proc/rank_info.h"

namespace hangscan {

struct DiscoveryOptions {
  std::vector<int> pids;      // --pid (repeatable)
  bool subprocesses = false;  // --subprocesses: each pid's descendants too
  std::string match;          // --match REGEX over command lines ("" = none)
  std::string proc_root = "/proc";
  int self_pid = 0;  // 0: getpid(); tests pass another to play hangscan
};

struct DiscoveredProcess {
  int pid = 0;
  int ppid = 0;
  std::string role;      // kRoleRank, kRoleLauncher, kRoleHelper, kRoleProcess
  std::string launcher;  // "torchrun", "mpirun", ... "" if unknown
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::optional<int> world_size;
  std::optional<int> owner;              // helpers: the rank or launcher they belong to
  std::string reason;                    // why this role, for --verbose
  std::vector<std::string> environment;  // as read (memory first); reused by apply_rank_info
};

// Selects processes and assigns roles. Processes come out sorted: ranks by rank, then the
// rest by pid. Errc::usage for an invalid pattern, Errc::not_found when nothing is left to
// capture; everything skipped on the way is a diagnostic appended to `diagnostics`.
Result<std::vector<DiscoveredProcess>> discover(const DiscoveryOptions& options,
                                                std::vector<Diagnostic>* diagnostics = nullptr);

// Fills rank, world_size, local_rank, launcher and role of a snapshot from the environment
// the process sees now. With `discovered` (from discover()) its role and launcher are kept:
// they were decided with the whole process tree in view; a "process" whose environment now
// has a rank becomes a rank. Without it the process is judged alone (cores, single pids).
void apply_rank_info(ProcessSnapshot& p, const std::vector<std::string>& env,
                     const DiscoveredProcess* discovered = nullptr);

// A process that was selected but could not be opened (gone, zombie, ptrace refused): it
// stays in the report with its rank and an error diagnostic, so the rank is not counted as
// missing and the reason is shown.
ProcessSnapshot unopened_snapshot(const DiscoveredProcess& dp, const Error& e);

// The current environment of a live process (libc's environ in memory, else
// /proc/PID/environ); empty when neither is readable.
std::vector<std::string> live_environment(int pid);

}  // namespace hangscan
