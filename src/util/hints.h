// Every user-facing hint text that more than one place gives, in one wording.
//
// Why: a hint is the one line that tells a user what to do next, so it must say the same
// thing wherever the same problem shows (the ptrace-permission hint once existed in three
// wordings, one of them without the container advice). A hint given in one place only stays
// next to its error, where the reader of the code needs it.
#pragma once

#include <string>

namespace hangscan::hints {

// ptrace (or /proc/PID/maps, /proc/PID/mem) refused for permission.
const char* ptrace_permission();
// An internal error: hangscan's bug, triggered by one target's data.
const char* internal_error();
// Out of memory: a limit (ulimit -v, a cgroup, the job's memory) or a full machine.
const char* out_of_memory();
// A deadline of the fan-out or of the agent passed before the work was done.
const char* raise_timeout();
// A pid chosen from a report no longer names the process of the report.
const char* fresh_report();
// A Slurm job id squeue does not know.
const char* unknown_slurm_job();
// A core could not be written in the directory given by `option` ("-o" or "--gcore-dir").
std::string writable_core_dir(const std::string& option);
// A core of this process is already in the directory given by `option`.
std::string core_already_there(const std::string& option);
// A pid that is not (or no longer) a process.
const char* check_pid();
// The process executed a new program (exec) while it was being captured.
const char* run_again_after_exec();
// The pid given is hangscan's own.
const char* own_pid();
// hangscan runs in a container that does not grant it CAP_SYS_PTRACE (Docker's, podman's and
// Kubernetes' default): the runtime's fix, and what still works without it.
const char* container_ptrace();
// The quiet dump (BPF snapshot of blocked threads) is off: what turns it on.
const char* quiet_dump_off();
// hangscan runs in a pid namespace that is not the host's: BPF (the eBPF recorder, the quiet
// dump) is off there; where it works again.
const char* bpf_pid_namespace();

}  // namespace hangscan::hints
