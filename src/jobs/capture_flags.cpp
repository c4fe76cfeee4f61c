#include "jobs/capture_flags.h"

#include <cstdlib>
#include <string_view>

namespace hangscan {

namespace {

CaptureOptions common_options(const CaptureFlags& f) {
  CaptureOptions c;
  c.unwinder = f.unwinder == "libunwind" ? UnwinderKind::libunwind : UnwinderKind::libdw;
  c.locals = f.locals;
  c.python = !f.no_python;
  return c;
}

}  // namespace

bool quiet_path_refused(const CaptureFlags& f) {
  const char* env = std::getenv("HANGSCAN_NO_BPF");
  return f.no_bpf || (env != nullptr && std::string_view(env) == "1");
}

CaptureOptions live_capture_options(const CaptureFlags& f) {
  CaptureOptions c = common_options(f);
  c.merge_native = f.native;
  c.nonblocking = f.nonblocking;
  c.quiet = !quiet_path_refused(f);
  return c;
}

CaptureOptions core_capture_options(const CaptureFlags& f) {
  CaptureOptions c = common_options(f);
  c.merge_native = !f.python_only;
  c.kernel_stacks = false;
  return c;
}

std::vector<std::string> capture_flag_args(const CaptureFlags& f) {
  std::vector<std::string> args{"--unwinder", f.unwinder};
  if (f.native) args.emplace_back("--native");
  if (f.locals) args.emplace_back("--locals");
  if (f.nonblocking) args.emplace_back("--nonblocking");
  if (f.no_python) args.emplace_back("--no-python");
  if (quiet_path_refused(f)) args.emplace_back("--no-bpf");
  return args;
}

}  // namespace hangscan
