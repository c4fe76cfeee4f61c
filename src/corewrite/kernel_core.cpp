#include "corewrite/kernel_core.h"

#include <signal.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "proc/proc_facts.h"
#include "proc/proc_files.h"

namespace hangscan {

Result<CoreSignal> parse_core_signal(const std::string& text) {
  std::string name = text.starts_with("SIG") ? text.substr(3) : text;
  int number = name == "ABRT" ? SIGABRT : name == "QUIT" ? SIGQUIT : name == "SEGV" ? SIGSEGV : 0;
  if (number == 0) {
    return Error(Errc::usage,
                 fmt::format("--signal {}: not a core-dumping signal hangscan sends", text), 0,
                 "use --signal ABRT (or QUIT, SEGV)");
  }
  return CoreSignal{number, name};
}

Result<std::string> send_core_signal(int pid, const CoreSignal& signal,
                                     const std::string& proc_root) {
  auto limits = read_text_file(fmt::format("{}/{}/limits", proc_root, pid));
  auto limit = limits ? parse_core_limit(*limits) : std::nullopt;
  if (limit && *limit == 0) {
    return Error(
        Errc::unsupported,
        fmt::format("pid {} has a core size limit of 0: the kernel would write no core", pid), 0,
        fmt::format("raise it first: prlimit --pid {} --core=unlimited", pid));
  }
  if (::kill(pid, signal.number) != 0) {
    int err = errno;
    return Error(Errc::permission, fmt::format("cannot signal pid {}: {}", pid, std::strerror(err)),
                 err, "run as the process's user or as root");
  }
  auto pattern = read_text_file(fmt::format("{}/sys/kernel/core_pattern", proc_root));
  std::string where = pattern ? *pattern : "?";
  while (!where.empty() && where.back() == '\n') where.pop_back();
  return where;
}

}  // namespace hangscan
