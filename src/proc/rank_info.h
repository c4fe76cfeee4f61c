// Rank, world size and launcher of the processes of a distributed job.
//
// Why: the question an operator asks of a hung job is "which rank is not where the others
// are", so every process must carry its rank. Launchers put it in the environment under
// different names (torchrun RANK, Slurm SLURM_PROCID, Open MPI OMPI_COMM_WORLD_RANK, MPICH
// PMI_RANK ...), and the process tree says who is a rank, who launched it and who is only a
// helper (resource tracker, dataloader worker) that must never be counted as a rank. This is
// pure logic over already-read facts, so it is unit-tested on fixtures.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hangscan {

// Role names as they appear in ProcessSnapshot::role and the JSON output.
inline constexpr const char* kRoleRank = "rank";
inline constexpr const char* kRoleLauncher = "launcher";
inline constexpr const char* kRoleHelper = "helper";
inline constexpr const char* kRoleProcess = "process";
// A plain process that forked copies of itself (a multiprocessing pool, a DataLoader, a fork
// storm) owns them; each copy is a worker. After the capture a worker waiting in its pool's task
// loop with no task of its own becomes "idle" (group/roles.h).
inline constexpr const char* kRoleOwner = "owner";
inline constexpr const char* kRoleWorker = "worker";
inline constexpr const char* kRoleIdle = "idle";

// What the environment alone says about a process.
struct RankInfo {
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::optional<int> world_size;
  std::string launcher;     // launcher implied by the variables ("torchrun", "srun" ...)
  std::string rank_source;  // the variable the rank came from ("RANK", "SLURM_PROCID" ...)
  bool has_rank() const { return rank.has_value(); }
};

// Value of `key` in an environment of "K=V" strings; the last definition wins, as for getenv
// after putenv appended a duplicate.
std::optional<std::string> env_value(const std::vector<std::string>& env, std::string_view key);

// Decides rank/local_rank/world_size from the variables, most specific launcher first
// (RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID); the world size comes from
// the same family as the rank. Malformed numbers are ignored.
RankInfo rank_from_environment(const std::vector<std::string>& env);

// What a command line says a process is.
enum class CmdlineKind {
  plain,        // nothing recognized: a user program (possibly a rank)
  launcher,     // torchrun, mpirun, srun, orted, hydra_pmi_proxy, slurmstepd, deepspeed ...
  spawn_child,  // `python -c "from multiprocessing.spawn import spawn_main ..."`
  helper,       // resource tracker, forkserver, compile worker
  pool_worker,  // a pool's worker started by exec: `python -m joblib...loky...popen_loky_posix`
};

struct CmdlineClass {
  CmdlineKind kind = CmdlineKind::plain;
  std::string launcher;  // for kind launcher: "torchrun", "mpirun", "srun", ...
  std::string what;      // short description for diagnostics ("resource tracker")
};

// Classifies a process from its argv (and comm, used when argv is empty or rewritten, e.g.
// "slurmstepd: [12.0]").
CmdlineClass classify_cmdline(const std::vector<std::string>& cmdline, std::string_view comm = {});

// The facts about one process that role assignment needs.
struct ProcessFacts {
  int pid = 0;
  int ppid = 0;
  std::string comm;
  std::vector<std::string> cmdline;
  std::vector<std::string> environment;
};

struct RoleDecision {
  int pid = 0;
  std::string role;          // kRoleRank, kRoleLauncher, kRoleHelper, kRoleProcess
  std::string launcher;      // launcher of the job this process belongs to; "" if unknown
  RankInfo rank;             // rank fields are empty for helpers and launchers
  std::optional<int> owner;  // helpers: pid of the rank or launcher they belong to
  std::string reason;        // one phrase: why this role ("child of torchrun", ...)
};

// Assigns a role to every process of one set, using the parent links inside the set:
// - a recognized launcher command line is a launcher, whatever its environment says
//   (torchrun under srun has SLURM_PROCID, it is still not a rank);
// - helpers by command line belong to their nearest rank or launcher ancestor;
// - a process with a rank variable is a rank, unless an ancestor in the set is a rank with
//   the same rank (a forked dataloader worker inherits RANK): then it is a helper;
// - a process without rank variables is a rank of unknown number when it is a child of a
//   launcher or a sibling of ranks, a helper when its parent is a rank, else a plain process;
// - a plain parent of ranks (a multiprocessing.spawn parent) is a launcher;
// - a plain process forked from a plain process with the same command line (fork without
//   exec: multiprocessing's fork workers, a fork storm) is a worker, its parent their owner.
// The result is in the order of `procs`.
std::vector<RoleDecision> assign_roles(const std::vector<ProcessFacts>& procs);

}  // namespace hangscan
