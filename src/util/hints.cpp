#include "util/hints.h"

namespace hangscan::hints {

const char* ptrace_permission() {
  return "run as the process's user or as root; on hardened kernels set "
         "'sysctl kernel.yama.ptrace_scope=0' (or 1 with the same user); in a container "
         "add CAP_SYS_PTRACE (docker run --cap-add=SYS_PTRACE)";
}

const char* internal_error() {
  return "this is a hangscan bug triggered by this target's data; the other targets are reported; "
         "please report it with the output of -v";
}

const char* out_of_memory() {
  return "hangscan ran out of memory under its limit: raise `ulimit -v` or the cgroup's memory "
         "limit, or run it where more memory is free";
}

const char* raise_timeout() { return "raise --timeout"; }

const char* fresh_report() { return "run hangscan again for a fresh report"; }

const char* unknown_slurm_job() {
  return "check the id with 'squeue -u $USER'; a finished job has no ranks to capture";
}

std::string writable_core_dir(const std::string& option) {
  return "choose a writable directory with " + option + " DIR";
}

std::string core_already_there(const std::string& option) {
  return "a core of this process is already there; move it away or " +
         std::string(option == "-o" ? "use -o DIR" : "choose another " + option);
}

const char* check_pid() { return "check the pid with 'ps -p PID'; the process may have exited"; }

const char* run_again_after_exec() {
  return "it replaced its program while hangscan held it; run hangscan again to capture the "
         "program it runs now";
}

const char* own_pid() {
  return "hangscan cannot stop the threads it runs on; give the pid of the process to capture "
         "(in a script, $$ is the shell's own pid: use the target's, e.g. from 'pgrep -f')";
}

const char* container_ptrace() {
  return "give hangscan's container CAP_SYS_PTRACE: start it with --cap-add SYS_PTRACE (docker, "
         "podman); in Kubernetes debug with 'kubectl debug --profile=general' or set "
         "securityContext.capabilities.add: "
         "[\"SYS_PTRACE\"]; where /proc/PID/mem is still readable, --nonblocking reads the "
         "Python stacks without ptrace";
}

const char* quiet_dump_off() {
  return "dump then stops every thread with ptrace, as before; for a dump that leaves blocked "
         "threads asleep run as root (or with CAP_BPF and CAP_PERFMON) on Linux 5.18+ with BTF, "
         "with a hangscan built with eBPF; 'hangscan doctor' says which is missing";
}

const char* bpf_pid_namespace() {
  return "for the eBPF recorder and the quiet dump run hangscan in the host's pid namespace: "
         "on the host, or in a container started with --pid=host (docker, podman; Kubernetes: "
         "hostPID: true); meanwhile watch samples with ptrace and dump stops threads with ptrace";
}

}  // namespace hangscan::hints
