#include "crash/crash_explainer.h"

#include <csignal>
#include <cstring>
#include <map>

#include <fmt/core.h>

namespace hangscan {
namespace {

constexpr std::uint64_t kNullPage = 4096;
constexpr std::uint64_t kNearStack = 64 * 1024;
constexpr std::size_t kRecursionRepeats = 100;

// "ns::f(int) const [clone .constprop.0]" -> "ns::f"; "__GI_abort" -> "abort";
// "__libc_start_main@@GLIBC_2.34" -> "__libc_start_main".
std::string bare_name(std::string s) {
  if (auto at = s.find(" [clone"); at != std::string::npos) s.resize(at);
  if (auto at = s.find('@'); at != std::string::npos && at > 0) s.resize(at);
  for (const char* suffix : {" const", " volatile", " &&", " &", " noexcept"}) {
    if (s.ends_with(suffix)) s.resize(s.size() - std::strlen(suffix));
  }
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        // Keep "operator()" intact.
        if (!(i >= 8 && s.compare(i - 8, 8, "operator") == 0 && s.compare(i, 2, "()") == 0)) {
          s.resize(i);
        }
        break;
      }
    }
  }
  if (s.starts_with("__GI_")) s.erase(0, 5);
  return s;
}

bool name_matches(const std::string& bare, std::string_view want) {
  if (want.ends_with("::")) return bare.find(want) != std::string::npos;
  if (bare == want) return true;
  return bare.size() > want.size() + 2 && bare.ends_with(want) &&
         bare.compare(bare.size() - want.size() - 2, 2, "::") == 0;
}

std::string hex(std::uint64_t v) { return fmt::format("{:#x}", v); }

// ctypes' call path, by name, or by the modules it runs in: where libffi and _ctypes have no
// symbols (a node or container without debug info), their frames are unnamed.
bool through_ctypes(const CrashView& v) {
  if (v.has_frame({"ffi_call", "ffi_call_int", "_call_function_pointer", "PyCFuncPtr_call"}))
    return true;
  if (v.crashed == nullptr) return false;
  for (const auto& f : v.crashed->frames) {
    std::string_view base = f.module;
    if (auto slash = base.rfind('/'); slash != std::string_view::npos)
      base.remove_prefix(slash + 1);
    if (base.starts_with("libffi.so") || base.starts_with("_ctypes.")) return true;
  }
  return false;
}

std::string where(const CrashView& v) {
  const Frame* f = v.fault_frame();
  return f != nullptr ? " in " + describe_frame(*f) : std::string();
}

std::string at_address(const CrashView& v) {
  return v.signal->address ? " at address " + hex(*v.signal->address) : std::string();
}

bool is_signal(const CrashView& v, int sig) {
  return v.signal != nullptr && v.signal->number == sig;
}

bool sent_by_someone(const CrashView& v) {
  return v.signal != nullptr && v.signal->code <= 0 && v.signal->sender_pid &&
         *v.signal->sender_pid != v.process.pid;
}

bool in_terminate(const CrashView& v) {
  return v.has_frame({"std::terminate", "__cxxabiv1::__terminate", "__verbose_terminate_handler",
                      "__cxa_call_terminate"});
}

// The caller of the first frame named `callee`, innermost first.
const Frame* caller_of(const CrashView& v, std::string_view callee) {
  if (v.crashed == nullptr) return nullptr;
  const auto& fr = v.crashed->frames;
  for (std::size_t i = 0; i + 1 < fr.size(); ++i) {
    if (name_matches(bare_name(fr[i].function), callee)) {
      for (std::size_t j = i + 1; j < fr.size(); ++j) {
        if (fr[j].function != "??") return &fr[j];
      }
    }
  }
  return nullptr;
}

// The function repeated most often among the crashed thread's frames, with its count.
std::pair<const Frame*, std::size_t> most_repeated(const CrashView& v) {
  if (v.crashed == nullptr) return {nullptr, 0};
  std::map<std::string, std::pair<const Frame*, std::size_t>> counts;
  for (const auto& f : v.crashed->frames) {
    if (f.function == "??") continue;
    auto& c = counts[f.function];
    if (c.first == nullptr) c.first = &f;
    ++c.second;
  }
  std::pair<const Frame*, std::size_t> best{nullptr, 0};
  for (const auto& [name, c] : counts) {
    if (c.second > best.second) best = c;
  }
  return best;
}

bool near_stack_limit(const CrashView& v) {
  if (!is_signal(v, SIGSEGV) || !v.signal->address) return false;
  std::uint64_t a = *v.signal->address;
  const auto& f = v.facts;
  if (f.sp && a + kNearStack >= *f.sp && a <= *f.sp + kNearStack) return true;
  if (f.stack && a + kNearStack * 16 >= f.stack->start && a < f.stack->start + kNullPage)
    return true;
  return most_repeated(v).second >= kRecursionRepeats;
}

std::string segv_reason(int code) {
  switch (code) {
    case 1:
      return "no memory is mapped there";
    case 2:
      return "the memory there does not allow this access (a write to read-only data, "
             "or a jump into non-executable memory)";
    case 3:
      return "a bounds check failed";
    case 4:
      return "a memory protection key denied it";
    case 0x80:
      return "a general protection fault (a non-canonical address: usually a "
             "corrupted pointer)";
    default:
      return "invalid memory access";
  }
}

std::string fpe_reason(int code) {
  switch (code) {
    case 1:
      return "integer division by zero";
    case 2:
      return "integer overflow (e.g. INT_MIN / -1)";
    case 3:
      return "floating-point division by zero (with FP exceptions enabled)";
    case 4:
      return "floating-point overflow (with FP exceptions enabled)";
    case 7:
      return "invalid floating-point operation (with FP exceptions enabled)";
    default:
      return "arithmetic exception";
  }
}

std::string bus_reason(int code) {
  switch (code) {
    case 1:
      return "a misaligned access";
    case 2:
      return "memory mapped from a file past its end (the file was truncated, or "
             "/dev/shm filled up under shared memory)";
    case 4:
    case 5:
      return "a hardware memory error";
    default:
      return "a bus error";
  }
}

// The rules. Signal meanings first (first match wins), then signatures (each adds one).
std::vector<CrashRule> make_rules() {
  return {
      {"sent-signal", true, [](const CrashView& v) { return sent_by_someone(v); },
       [](const CrashView& v) {
         return fmt::format(
             "{} was sent by another process (pid {}) with kill(): the program "
             "did not fault, it was killed",
             v.signal->name, *v.signal->sender_pid);
       }},
      {"uncaught-exception", true,
       [](const CrashView& v) {
         return is_signal(v, SIGABRT) && in_terminate(v) && v.facts.exception;
       },
       [](const CrashView& v) {
         const CxxException& e = *v.facts.exception;
         return fmt::format(
             "std::terminate was called after an uncaught C++ exception of type "
             "{}{}; abort() raised SIGABRT",
             e.type, e.what ? fmt::format(" (what(): \"{}\")", *e.what) : "");
       }},
      {"terminate", true,
       [](const CrashView& v) { return is_signal(v, SIGABRT) && in_terminate(v); },
       [](const CrashView& v) {
         bool thrown = v.has_frame({"__cxa_throw", "__cxa_rethrow", "_Unwind_RaiseException",
                                    "_Unwind_Resume_or_Rethrow"});
         return fmt::format("std::terminate was called ({}); abort() raised SIGABRT",
                            thrown ? "an uncaught C++ exception: nothing caught what was thrown"
                                   : "an uncaught C++ exception, an exception leaving a noexcept "
                                     "function or a destructor, or a joinable std::thread "
                                     "destroyed");
       }},
      {"python-fatal-error", true,
       [](const CrashView& v) {
         return v.has_frame({"Py_FatalError", "_Py_FatalErrorFunc", "_Py_FatalErrorFormat",
                             "_Py_FatalError_TstateNULL"});
       },
       [](const CrashView& v) {
         const Frame* c = caller_of(v, "_Py_FatalErrorFunc");
         if (c == nullptr) c = caller_of(v, "Py_FatalError");
         return fmt::format(
             "the Python interpreter stopped with a fatal error (Py_FatalError{}); "
             "its message (\"Fatal Python error: ...\") went to the process's stderr",
             c != nullptr ? ", called from " + describe_frame(*c) : "");
       }},
      {"assertion", true,
       [](const CrashView& v) {
         return is_signal(v, SIGABRT) &&
                v.has_frame({"__assert_fail", "__assert_fail_base", "__assert_perror_fail"});
       },
       [](const CrashView& v) {
         return v.facts.abort_message
                    ? fmt::format("an assertion failed: \"{}\"; abort() raised SIGABRT",
                                  *v.facts.abort_message)
                    : std::string("an assertion failed (assert()); abort() raised SIGABRT");
       }},
      {"glibc-detected-error", true,
       [](const CrashView& v) {
         return is_signal(v, SIGABRT) && v.facts.abort_message &&
                v.has_frame({"malloc_printerr", "__libc_message", "__fortify_fail",
                             "__stack_chk_fail", "__chk_fail"});
       },
       [](const CrashView& v) {
         bool heap = v.has_frame({"malloc_printerr"});
         return fmt::format("glibc detected {} and aborted: \"{}\"",
                            heap ? "heap corruption (a double free, a write past a heap buffer, "
                                   "or a free of a bad pointer)"
                                 : "a buffer overflow or a corrupted stack",
                            *v.facts.abort_message);
       }},
      {"abort", true,
       [](const CrashView& v) { return is_signal(v, SIGABRT) && v.has_frame({"abort"}); },
       [](const CrashView& v) {
         const Frame* c = caller_of(v, "abort");
         return fmt::format("abort() was called{} and raised SIGABRT",
                            c != nullptr ? " by " + describe_frame(*c) : "");
       }},
      {"stack-overflow", true, near_stack_limit,
       [](const CrashView& v) {
         auto [f, n] = most_repeated(v);
         std::string rec =
             f != nullptr && n >= kRecursionRepeats
                 ? fmt::format(" ({} appears {} times: endless recursion?)", describe_frame(*f), n)
                 : "";
         return fmt::format("SIGSEGV{}: stack overflow: the thread ran out of stack{}",
                            at_address(v), rec);
       }},
      {"null-pointer", true,
       [](const CrashView& v) {
         return is_signal(v, SIGSEGV) && v.signal->code > 0 && v.signal->address &&
                *v.signal->address < kNullPage;
       },
       [](const CrashView& v) {
         std::uint64_t a = *v.signal->address;
         return fmt::format("SIGSEGV at address {}: a null pointer dereference{}{}", hex(a),
                            a != 0 ? fmt::format(" (a field {} bytes into a null object)", a) : "",
                            where(v));
       }},
      {"segv", true, [](const CrashView& v) { return is_signal(v, SIGSEGV); },
       [](const CrashView& v) {
         return fmt::format("SIGSEGV{}: {}{}", at_address(v), segv_reason(v.signal->code),
                            where(v));
       }},
      {"sigbus", true, [](const CrashView& v) { return is_signal(v, SIGBUS); },
       [](const CrashView& v) {
         return fmt::format("SIGBUS{}: {}{}", at_address(v), bus_reason(v.signal->code), where(v));
       }},
      {"sigfpe", true, [](const CrashView& v) { return is_signal(v, SIGFPE); },
       [](const CrashView& v) {
         return fmt::format("SIGFPE: {}{}", fpe_reason(v.signal->code), where(v));
       }},
      {"sigill", true, [](const CrashView& v) { return is_signal(v, SIGILL); },
       [](const CrashView& v) {
         return fmt::format(
             "SIGILL{}: illegal instruction{}: code built for a newer CPU than "
             "this one (e.g. AVX-512), a jump through a corrupted function "
             "pointer, or a deliberate trap (__builtin_trap, ud2)",
             at_address(v), where(v));
       }},
      {"other-signal", true, [](const CrashView& v) { return v.signal != nullptr; },
       [](const CrashView& v) {
         return fmt::format("the process was killed by {}{}", v.signal->name, where(v));
       }},

      {"nccl-watchdog", false,
       [](const CrashView& v) {
         return v.has_frame({"ncclCommWatchdog", "ncclCommWatchdogInternal", "handleNCCLGuard",
                             "workCleanupLoop", "watchdogHandler",
                             "ProcessGroupNCCL::Watchdog::", "WorkNCCL::handleException"});
       },
       [](const CrashView&) {
         return std::string(
             "this is torch.distributed's NCCL watchdog (ProcessGroupNCCL) taking the process "
             "down: a collective timed out or NCCL reported an asynchronous error on this rank; "
             "look for the rank that failed or stalled first (NCCL_DEBUG=INFO and the "
             "watchdog's message on stderr say why)");
       }},
      {"cuda-error", false,
       [](const CrashView& v) {
         return v.has_frame({"c10_cuda_check_implementation", "c10::cuda::", "cudaGetLastError",
                             "cudaDeviceSynchronize", "cudaStreamSynchronize", "at::cuda::"}) &&
                (in_terminate(v) || v.has_frame({"abort", "__cxa_throw"}));
       },
       [](const CrashView&) {
         return std::string(
             "the crash is on a CUDA error path: a CUDA call returned an error, often left by "
             "an earlier kernel that faulted asynchronously; rerun with CUDA_LAUNCH_BLOCKING=1 "
             "to see the failing kernel");
       }},
      {"gloo-error", false,
       [](const CrashView& v) {
         return v.has_frame({"gloo::"}) && (in_terminate(v) || v.has_frame({"abort"}));
       },
       [](const CrashView&) {
         return std::string(
             "a gloo collective failed (gloo::EnforceNotMet or a peer closed its connection): "
             "another rank probably died or timed out first");
       }},
      {"c10d-store", false,
       [](const CrashView& v) {
         return v.has_frame({"c10d::TCPStore::", "c10d::detail::TCPClient::"});
       },
       [](const CrashView&) {
         return std::string(
             "the crash involves the c10d TCPStore (rendezvous): the store's host (rank 0 or "
             "the launcher) may be gone or unreachable");
       }},
      {"torch-error", false,
       [](const CrashView& v) {
         return v.facts.exception && v.facts.exception->type.starts_with("c10::");
       },
       [](const CrashView& v) {
         return fmt::format(
             "the uncaught exception is a PyTorch error ({}); its message went "
             "to the process's stderr",
             v.facts.exception->type);
       }},
      {"out-of-memory", false,
       [](const CrashView& v) {
         return v.has_frame({"std::__throw_bad_alloc"}) ||
                (v.facts.exception && v.facts.exception->type == "std::bad_alloc");
       },
       [](const CrashView&) {
         return std::string(
             "a memory allocation failed (std::bad_alloc): the process ran out "
             "of memory or hit a limit (ulimit -v, cgroup)");
       }},
      {"python-exception", false,
       [](const CrashView& v) {
         return v.has_frame({"_PyErr_SetObject", "PyErr_SetObject", "_PyErr_SetString",
                             "PyErr_SetString", "PyErr_Format", "_PyErr_Format", "PyErr_Print",
                             "PyErr_PrintEx", "_PyErr_SetKeyError"});
       },
       [](const CrashView& v) {
         const Frame* p = v.python_frame();
         return fmt::format("a Python exception was being raised in the crashing thread{}",
                            p != nullptr ? " (in " + describe_frame(*p) + ")" : "");
       }},
      {"ctypes-call", false,
       [](const CrashView& v) { return v.python_frame() != nullptr && through_ctypes(v); },
       [](const CrashView& v) {
         return fmt::format("the native code was called from Python through ctypes, by {}",
                            describe_frame(*v.python_frame()));
       }},
      {"python-code", false,
       [](const CrashView& v) { return v.python_frame() != nullptr && !through_ctypes(v); },
       [](const CrashView& v) {
         return fmt::format(
             "the crashing thread was running Python code; innermost Python "
             "frame: {}",
             describe_frame(*v.python_frame()));
       }},
  };
}

}  // namespace

bool CrashView::has_frame(std::initializer_list<const char*> names) const {
  if (crashed == nullptr) return false;
  for (const auto& f : crashed->frames) {
    if (f.kind == FrameKind::python) continue;
    std::string bare = bare_name(f.function);
    for (const char* n : names) {
      if (name_matches(bare, n)) return true;
    }
  }
  return false;
}

const Frame* CrashView::fault_frame() const {
  if (crashed == nullptr) return nullptr;
  // A fault the thread's own instruction caused (code > 0) happened in the innermost frame,
  // named or not: naming a caller instead would blame the wrong code.
  bool synchronous = signal != nullptr && signal->code > 0;
  for (const auto& f : crashed->frames) {
    if (f.function.empty() || f.function == "??") {
      if (synchronous && &f == &crashed->frames.front()) return &f;
      continue;
    }
    std::string bare = bare_name(f.function);
    if (bare == "raise" || bare == "__pthread_kill_implementation" || bare == "pthread_kill" ||
        bare == "__pthread_kill_internal" || bare == "gsignal") {
      continue;
    }
    return &f;
  }
  return nullptr;
}

const Frame* CrashView::python_frame() const {
  if (crashed == nullptr) return nullptr;
  for (const auto& f : crashed->frames) {
    if (f.kind == FrameKind::python) return &f;
  }
  return nullptr;
}

std::string describe_frame(const Frame& f) {
  std::string name = f.function.empty() || f.function == "??" ? hex(f.pc) : f.function;
  if (f.file && f.line) {
    auto slash = f.file->rfind('/');
    return fmt::format("{} ({}:{})", name,
                       slash == std::string::npos ? *f.file : f.file->substr(slash + 1), *f.line);
  }
  if (!f.module.empty()) {
    auto slash = f.module.rfind('/');
    return fmt::format("{} ({})", name,
                       slash == std::string::npos ? f.module : f.module.substr(slash + 1));
  }
  return name;
}

const std::vector<CrashRule>& crash_rules() {
  static const std::vector<CrashRule> rules = make_rules();
  return rules;
}

std::vector<std::string> explain_crash(const ProcessSnapshot& process, const CrashFacts& facts) {
  std::vector<std::string> out;
  if (!process.core || !process.core->signal) return out;
  const ThreadSnapshot* crashed = nullptr;
  for (const auto& t : process.threads) {
    if (t.crashed || (process.core->crashed_tid && t.tid == *process.core->crashed_tid)) {
      crashed = &t;
      break;
    }
  }
  CrashView view{process, crashed, &*process.core->signal, facts};
  bool meaning_found = false;
  for (const auto& rule : crash_rules()) {
    if (rule.signal_meaning && meaning_found) continue;
    if (!rule.matches(view)) continue;
    std::string s = rule.sentence(view);
    if (s.empty()) continue;
    out.push_back(std::move(s));
    if (rule.signal_meaning) meaning_found = true;
  }
  return out;
}

std::vector<std::string> explain_crash(Target& target, const ProcessSnapshot& process) {
  if (!process.core || !process.core->signal) return {};
  return explain_crash(process, gather_crash_facts(target, process));
}

}  // namespace hangscan
