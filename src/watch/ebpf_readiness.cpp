#include "watch/ebpf_readiness.h"

#include <fstream>
#include <sstream>

#include <unistd.h>

#include "util/parse_number.h"
#include "watch/recorder.h"

namespace hangscan {

namespace {

constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

std::uint64_t effective_caps() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      std::string hex = line.substr(7);
      hex.erase(0, hex.find_first_not_of(" \t"));
      return parse_int<std::uint64_t>(hex, 16).value_or(0);
    }
  }
  return 0;
}

bool has(std::uint64_t caps, int cap) { return (caps >> cap) & 1; }

std::string read_all(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

EbpfReadiness ebpf_readiness() {
  EbpfReadiness r;
  if (!recorder_built_in()) {
    r.finding =
        "this hangscan was built without eBPF support: watch samples with ptrace at a low rate";
    r.fix = "install clang, bpftool and libbpf-dev (tools/deps.sh package) and rebuild";
    return r;
  }
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    r.finding =
        "the kernel has no BTF (/sys/kernel/btf/vmlinux): watch samples with ptrace at a low rate";
    r.fix =
        "a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian's and most distributions' kernels "
        "are)";
    return r;
  }
  std::uint64_t caps = effective_caps();
  if (!has(caps, kCapSysAdmin) && !(has(caps, kCapBpf) && has(caps, kCapPerfmon))) {
    r.finding = "no CAP_BPF and CAP_PERFMON: watch samples with ptrace at a low rate";
    r.fix = "run as root, or: setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep $(command -v hangscan)";
    return r;
  }
  if (read_all("/sys/kernel/security/lockdown").find("[confidentiality]") != std::string::npos) {
    r.finding = "kernel lockdown (confidentiality) forbids reading kernel memory from eBPF";
    r.fix = "boot with lockdown=integrity or none, where policy allows";
    return r;
  }
  auto rec = Recorder::start(RecorderOptions{});
  if (!rec) {
    r.finding = rec.error().what();
    r.fix = rec.error().hint;
    return r;
  }
  r.ready = true;
  r.finding =
      std::string("the recorder loads and attaches (CO-RE, BTF)") +
      ((*rec)->records_oom()
           ? ""
           : "; OOM victims come from the kernel log (oom:mark_victim takes a pid here)") +
      ((*rec)->records_wakers()
           ? ""
           : "; who woke a wait is not known (the kernel's BTF does not place its preempt count)");
  return r;
}

}  // namespace hangscan
