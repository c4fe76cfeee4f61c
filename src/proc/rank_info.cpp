#include "proc/rank_info.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "util/parse_number.h"

namespace hangscan {

namespace {

std::optional<int> env_int(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  return parse_int_in<int>(*s, 0, std::numeric_limits<int>::max());
}

bool has_prefix_var(const std::vector<std::string>& env, std::string_view prefix) {
  return std::any_of(env.begin(), env.end(), [&](const std::string& kv) {
    return std::string_view(kv).starts_with(prefix);
  });
}

// One family of variables a launcher sets: where the rank, the local rank and the size are.
struct EnvFamily {
  std::string_view rank;
  std::array<std::string_view, 2> local_rank;
  std::array<std::string_view, 2> size;
};

// Most specific first: RANK is the global rank under torchrun even when SLURM_PROCID (the
// node's task index) is also set.
constexpr std::array<EnvFamily, 5> kFamilies = {{
    {"RANK", {"LOCAL_RANK", ""}, {"WORLD_SIZE", ""}},
    {"OMPI_COMM_WORLD_RANK", {"OMPI_COMM_WORLD_LOCAL_RANK", ""}, {"OMPI_COMM_WORLD_SIZE", ""}},
    {"PMIX_RANK",
     {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"},
     {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE"}},
    {"PMI_RANK", {"MPI_LOCALRANKID", "PMI_LOCAL_RANK"}, {"PMI_SIZE", ""}},
    {"SLURM_PROCID", {"SLURM_LOCALID", ""}, {"SLURM_NTASKS", "SLURM_NPROCS"}},
}};

std::string launcher_from_env(const std::vector<std::string>& env, std::string_view source) {
  if (source == "RANK") {
    if (env_value(env, "TORCHELASTIC_RUN_ID") || env_value(env, "TORCHELASTIC_RESTART_COUNT"))
      return "torchrun";
    if (has_prefix_var(env, "ACCELERATE_")) return "accelerate";
    return {};
  }
  if (source == "OMPI_COMM_WORLD_RANK") return "mpirun";
  if (source == "PMIX_RANK" || source == "PMI_RANK") {
    if (has_prefix_var(env, "OMPI_") || has_prefix_var(env, "HYDRA_") ||
        has_prefix_var(env, "HYDI_") || env_value(env, "MPI_LOCALRANKID"))
      return "mpirun";
    if (env_value(env, "SLURM_STEP_ID") || env_value(env, "SLURM_STEPID")) return "srun";
    return "mpirun";
  }
  if (source == "SLURM_PROCID") return "srun";
  return {};
}

std::string basename_of(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool is_python(std::string_view prog) {
  // python, python3, python3.11, python3.11d, python3-dbg, pypy3 ...
  return prog.starts_with("python") || prog.starts_with("pypy");
}

// What a python interpreter is asked to run: ("module", name), ("code", text) or
// ("script", path); ("", "") when only the interpreter is named.
std::pair<std::string, std::string> python_payload(const std::vector<std::string>& argv) {
  for (std::size_t i = 1; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (a == "-m" && i + 1 < argv.size()) return {"module", argv[i + 1]};
    if (a.starts_with("-m") && a.size() > 2) return {"module", std::string(a.substr(2))};
    if (a == "-c" && i + 1 < argv.size()) return {"code", argv[i + 1]};
    if (a == "-W" || a == "-X" || a == "--check-hash-based-pycs") {
      ++i;  // option with a separate argument
      continue;
    }
    if (a.starts_with("-")) continue;
    return {"script", std::string(a)};
  }
  return {"", ""};
}

struct LauncherName {
  std::string_view name;  // program, script or module
  std::string_view launcher;
};

constexpr std::array<LauncherName, 27> kLaunchers = {{
    {"torchrun", "torchrun"},
    {"torch.distributed.run", "torchrun"},
    {"torch.distributed.launch", "torch.distributed.launch"},
    {"deepspeed", "deepspeed"},
    {"ds", "deepspeed"},
    {"deepspeed.launcher.launch", "deepspeed"},
    {"deepspeed.launcher.runner", "deepspeed"},
    {"accelerate", "accelerate"},
    {"accelerate-launch", "accelerate"},
    {"accelerate.commands.launch", "accelerate"},
    {"accelerate.commands.accelerate_cli", "accelerate"},
    {"mpirun", "mpirun"},
    {"mpiexec", "mpirun"},
    {"orterun", "mpirun"},
    {"prterun", "mpirun"},
    {"prun", "mpirun"},
    {"mpirun.openmpi", "mpirun"},
    {"mpiexec.openmpi", "mpirun"},
    {"mpirun.mpich", "mpirun"},
    {"mpiexec.mpich", "mpirun"},
    {"mpiexec.hydra", "mpirun"},
    {"orted", "mpirun"},
    {"prted", "mpirun"},
    {"hydra_pmi_proxy", "mpirun"},
    {"srun", "srun"},
    {"slurmstepd", "srun"},
    {"torchx", "torchx"},
}};

std::string_view launcher_named(std::string_view name) {
  for (const auto& l : kLaunchers)
    if (l.name == name) return l.launcher;
  return {};
}

struct HelperCode {
  std::string_view needle;
  std::string_view what;
};

constexpr std::array<HelperCode, 6> kHelpers = {{
    {"multiprocessing.resource_tracker", "resource tracker"},
    {"loky.backend.resource_tracker", "resource tracker"},  // joblib's own copy
    {"multiprocessing.semaphore_tracker", "semaphore tracker"},
    {"multiprocessing.forkserver", "forkserver"},
    {"torch._inductor.compile_worker", "compile worker"},
    {"_inductor/compile_worker", "compile worker"},
}};

// A child that is its parent's copy: the same command line, or (a zombie's is gone) the same name.
bool forked_copy(const ProcessFacts& child, const ProcessFacts& parent) {
  if (child.cmdline.empty()) return !child.comm.empty() && child.comm == parent.comm;
  return child.cmdline == parent.cmdline;
}

}  // namespace

std::optional<std::string> env_value(const std::vector<std::string>& env, std::string_view key) {
  std::optional<std::string> out;
  for (const auto& kv : env) {
    std::string_view v(kv);
    if (v.size() > key.size() && v[key.size()] == '=' && v.starts_with(key))
      out = std::string(v.substr(key.size() + 1));
  }
  return out;
}

RankInfo rank_from_environment(const std::vector<std::string>& env) {
  RankInfo info;
  for (const auto& fam : kFamilies) {
    auto rank = env_int(env_value(env, fam.rank));
    if (!rank) continue;
    info.rank = rank;
    info.rank_source = std::string(fam.rank);
    for (auto key : fam.local_rank) {
      if (!key.empty() && !info.local_rank) info.local_rank = env_int(env_value(env, key));
    }
    for (auto key : fam.size) {
      if (!key.empty() && !info.world_size) {
        auto size = env_int(env_value(env, key));
        if (size && *size > 0) info.world_size = size;
      }
    }
    info.launcher = launcher_from_env(env, fam.rank);
    return info;
  }
  // No rank variable: a local rank alone still tells which device the process drives.
  for (auto key :
       {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (!info.local_rank) info.local_rank = env_int(env_value(env, key));
  }
  return info;
}

CmdlineClass classify_cmdline(const std::vector<std::string>& cmdline, std::string_view comm) {
  CmdlineClass out;
  std::vector<std::string> argv = cmdline;
  // Rewritten titles ("slurmstepd: [12.0]", "orted: ...") keep the program before ':' or ' '.
  std::string prog = argv.empty() ? std::string(comm) : basename_of(argv[0]);
  if (auto cut = prog.find_first_of(": "); cut != std::string::npos && cut > 0) prog.resize(cut);
  if (prog.empty()) prog = std::string(comm);

  auto as_launcher = [&](std::string_view name) {
    auto l = launcher_named(name);
    if (l.empty()) return false;
    out.kind = CmdlineKind::launcher;
    out.launcher = std::string(l);
    out.what = std::string(name);
    return true;
  };
  for (const auto& a : argv) {
    if (a == "--multiprocessing-fork") {
      out.kind = CmdlineKind::spawn_child;
      out.what = "multiprocessing child";
      return out;
    }
  }
  if (!is_python(prog)) {
    if (as_launcher(prog)) return out;
    // A shell running a script is known by the script ("run.sh").
    bool shell = prog == "bash" || prog == "sh" || prog == "dash" || prog == "zsh";
    out.what = shell && argv.size() > 1 && !argv[1].starts_with("-") ? basename_of(argv[1]) : prog;
    return out;
  }
  auto [kind, payload] = python_payload(argv);
  if (kind == "code") {
    if (payload.find("multiprocessing.spawn") != std::string::npos &&
        payload.find("spawn_main") != std::string::npos) {
      out.kind = CmdlineKind::spawn_child;
      out.what = "multiprocessing child";
      return out;
    }
    for (const auto& h : kHelpers) {
      if (payload.find(h.needle) != std::string::npos) {
        out.kind = CmdlineKind::helper;
        out.what = std::string(h.what);
        return out;
      }
    }
    out.what = prog + " -c";
    return out;
  }
  if (kind == "module" && payload == "joblib.externals.loky.backend.popen_loky_posix") {
    out.kind = CmdlineKind::pool_worker;  // loky starts each worker by exec, not by fork
    out.what = "loky worker";
    return out;
  }
  if (kind == "module" || kind == "script") {
    for (const auto& h : kHelpers) {
      if (payload.find(h.needle) != std::string::npos) {
        out.kind = CmdlineKind::helper;
        out.what = std::string(h.what);
        return out;
      }
    }
    std::string name = kind == "script" ? basename_of(payload) : payload;
    out.what = name;
    if (kind == "script" && name.size() > 3 && name.ends_with(".py")) name.resize(name.size() - 3);
    if (as_launcher(name)) return out;
    return out;
  }
  out.what = prog;
  return out;
}

std::vector<RoleDecision> assign_roles(const std::vector<ProcessFacts>& procs) {
  const std::size_t n = procs.size();
  std::map<int, std::size_t> by_pid;
  for (std::size_t i = 0; i < n; ++i) by_pid.emplace(procs[i].pid, i);
  auto parent_of = [&](std::size_t i) -> std::optional<std::size_t> {
    auto it = by_pid.find(procs[i].ppid);
    if (it == by_pid.end() || it->second == i) return std::nullopt;
    return it->second;
  };
  // Ancestors inside the set, nearest first; bounded against a corrupt (cyclic) parent map.
  auto ancestors = [&](std::size_t i) {
    std::vector<std::size_t> out;
    auto p = parent_of(i);
    while (p && out.size() < n) {
      out.push_back(*p);
      p = parent_of(*p);
    }
    return out;
  };

  std::vector<CmdlineClass> cls(n);
  std::vector<RankInfo> env(n);
  std::vector<RoleDecision> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    cls[i] = classify_cmdline(procs[i].cmdline, procs[i].comm);
    env[i] = rank_from_environment(procs[i].environment);
    out[i].pid = procs[i].pid;
  }
  // Processes started by a forkserver are forked from it and keep its command line: they are
  // the workers, not the forkserver.
  for (std::size_t i = 0; i < n; ++i) {
    auto p = parent_of(i);
    if (cls[i].kind == CmdlineKind::helper && cls[i].what == "forkserver" && p &&
        cls[*p].kind == CmdlineKind::helper && cls[*p].what == "forkserver")
      cls[i].kind = CmdlineKind::spawn_child;
  }

  // 1. Command lines that settle it; 2. rank variables.
  for (std::size_t i = 0; i < n; ++i) {
    if (cls[i].kind == CmdlineKind::launcher) {
      out[i].role = kRoleLauncher;
      out[i].launcher = cls[i].launcher;
      out[i].reason = cls[i].what;
    } else if (cls[i].kind == CmdlineKind::helper) {
      out[i].role = kRoleHelper;
      out[i].reason = cls[i].what;
    } else if (env[i].has_rank()) {
      out[i].role = kRoleRank;
      out[i].rank = env[i];
      out[i].reason = env[i].rank_source;
    }
  }
  // 3. A rank below a rank with the same number inherited it: a forked worker of that rank
  // (the farthest such ancestor is the rank itself, nearer ones are workers too).
  std::vector<bool> env_rank(n);
  for (std::size_t i = 0; i < n; ++i) env_rank[i] = out[i].role == kRoleRank;
  for (std::size_t i = 0; i < n; ++i) {
    if (!env_rank[i]) continue;
    for (auto a : ancestors(i)) {
      if (env_rank[a] && env[a].rank == env[i].rank) {
        out[i].role = kRoleHelper;
        out[i].owner = procs[a].pid;
        out[i].rank = {};
        out[i].reason = "worker of rank " + std::to_string(*env[i].rank);
      }
    }
  }
  // 4. Processes without rank variables: placed by their relatives.
  auto is_rank = [&](std::size_t i) { return out[i].role == kRoleRank; };
  for (std::size_t i = 0; i < n; ++i) {
    if (!out[i].role.empty()) continue;
    auto p = parent_of(i);
    auto anc = ancestors(i);
    auto rank_anc = std::find_if(anc.begin(), anc.end(), is_rank);
    if (rank_anc != anc.end()) {
      out[i].role = kRoleHelper;
      out[i].owner = procs[*rank_anc].pid;
      out[i].reason = "child of rank process " + std::to_string(procs[*rank_anc].pid);
      continue;
    }
    bool sibling_rank = false;
    for (std::size_t j = 0; j < n && p; ++j)
      if (j != i && procs[j].ppid == procs[i].ppid && env_rank[j] && is_rank(j))
        sibling_rank = true;
    if (p && cls[*p].kind == CmdlineKind::launcher) {
      out[i].role = kRoleRank;
      out[i].reason = "child of " + cls[*p].what;
    } else if (sibling_rank) {
      out[i].role = kRoleRank;
      out[i].reason = "sibling of ranks";
    } else if (cls[i].kind == CmdlineKind::spawn_child && p) {
      out[i].role = kRoleRank;
      out[i].reason = "multiprocessing.spawn child";
    } else {
      out[i].role = kRoleProcess;
    }
  }
  // 4b. A plain copy of a plain parent (forked, never exec'd) is a worker; the parent owns it.
  for (std::size_t i = 0; i < n; ++i) {
    auto p = parent_of(i);
    if (!p || out[i].role != kRoleProcess) continue;
    bool started = cls[i].kind == CmdlineKind::pool_worker;
    if (!started && !forked_copy(procs[i], procs[*p])) continue;
    if (out[*p].role != kRoleProcess && out[*p].role != kRoleOwner && out[*p].role != kRoleWorker)
      continue;
    out[i].role = kRoleWorker;
    out[i].owner = procs[*p].pid;
    out[i].reason = (started ? "started by " : "forked by ") + std::to_string(procs[*p].pid);
    if (out[*p].role == kRoleProcess) out[*p].role = kRoleOwner;
  }
  // 5. A plain parent of ranks launched them (multiprocessing.spawn, a script with Popen).
  for (std::size_t i = 0; i < n; ++i) {
    auto p = parent_of(i);
    if (!is_rank(i) || !p || out[*p].role != kRoleProcess) continue;
    out[*p].role = kRoleLauncher;
    out[*p].reason = "parent of ranks";
    if (cls[i].kind == CmdlineKind::spawn_child) out[*p].launcher = "multiprocessing.spawn";
    else if (procs[i].cmdline == procs[*p].cmdline) out[*p].launcher = "multiprocessing";
    else if (out[*p].launcher.empty()) out[*p].launcher = cls[*p].what;
  }
  // Helpers by command line belong to the nearest rank or launcher.
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i].role != kRoleHelper || out[i].owner) continue;
    for (auto a : ancestors(i)) {
      if (out[a].role == kRoleRank || out[a].role == kRoleLauncher) {
        out[i].owner = procs[a].pid;
        break;
      }
    }
  }
  // Launcher of each rank and helper: the nearest launcher above it, else what the
  // environment implies.
  for (std::size_t i = 0; i < n; ++i) {
    if (out[i].role == kRoleLauncher && !out[i].launcher.empty()) continue;
    for (auto a : ancestors(i)) {
      if (out[a].role == kRoleLauncher && !out[a].launcher.empty()) {
        out[i].launcher = out[a].launcher;
        break;
      }
    }
    if (out[i].launcher.empty()) out[i].launcher = env[i].launcher;
  }
  // Ranks of unknown number still carry the world size and local rank their variables give.
  for (std::size_t i = 0; i < n; ++i) {
    if (is_rank(i) && !out[i].rank.has_rank()) {
      out[i].rank.world_size = env[i].world_size;
      out[i].rank.local_rank = env[i].local_rank;
    }
  }
  return out;
}

}  // namespace hangscan
