// The crash of a core explained in sentences.
//
// Why: a crashed job leaves the operator with `handleNCCLGuard -> std::terminate -> abort`
// and a signal number; what they need is "the NCCL watchdog rethrew an asynchronous error".
// Each piece of that knowledge is one rule in one table (crash_rules()): a name, a predicate
// over the crashed thread's frames, the signal and the CrashFacts read from memory, and the
// sentence. Adding a signature means adding one row; nothing else changes.
#pragma once

#include <string>
#include <vector>

#include "crash/crash_facts.h"
#include "hangscan/model.h"
#include "target/target.h"

namespace hangscan {

// What a rule sees.
struct CrashView {
  const ProcessSnapshot& process;
  const ThreadSnapshot* crashed = nullptr;  // the thread that took the signal, if known
  const SignalInfo* signal = nullptr;
  const CrashFacts& facts;

  // True when a frame of the crashed thread calls one of `names` (compared without
  // parameters, templates' arguments, clone suffixes and glibc's __GI_ prefix), or, for
  // names ending in "::", whose qualified name starts with it.
  bool has_frame(std::initializer_list<const char*> names) const;
  // The innermost frame that names a function (skipping the signal-raising libc frames); for
  // a fault of the thread's own instruction, the innermost frame even when it has no name.
  const Frame* fault_frame() const;
  // The innermost Python frame of the crashed thread.
  const Frame* python_frame() const;
};

struct CrashRule {
  const char* name;
  // Signal-meaning rules are exclusive: the first that matches wins. Signature rules each
  // add a sentence.
  bool signal_meaning;
  bool (*matches)(const CrashView&);
  std::string (*sentence)(const CrashView&);
};

// The rules, in order. Documented in docs/cores.md ("Crash rules").
const std::vector<CrashRule>& crash_rules();

// Sentences for CoreInfo::annotations; empty when the process did not crash.
std::vector<std::string> explain_crash(const ProcessSnapshot& process, const CrashFacts& facts);

// Convenience: gathers the facts from `target` and explains.
std::vector<std::string> explain_crash(Target& target, const ProcessSnapshot& process);

// "read_null (crash_native.c:28)" / "memcpy (libc.so.6)" / "0x7f..." for a sentence.
std::string describe_frame(const Frame& f);

}  // namespace hangscan
