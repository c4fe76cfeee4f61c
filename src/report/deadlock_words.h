// A deadlock's cycle in words: "thread 4711 (main, bank.cpp:14) waits for a mutex held by
// thread 4712 (audit, bank.cpp:20), which waits for one held by 4711".
//
// Why in report/: the engine (group/deadlock.h) finds the cycle as data (members, tids, wait
// edges); the writers make its sentence.
#pragma once

#include <string>

#include "group/deadlock.h"
#include "hangscan/model.h"

namespace hangscan {

// The sentence for one cycle (report/finding_words.h makes the deadlock findings' words with it,
// docs/output-schema.md "deadlocks").
std::string deadlock_sentence(const JobSnapshot& job, const Deadlock& d);

// "4712 (audit, bank.cpp:20)": a thread's id, its name and where it is (its innermost Python
// frame with a line, else its innermost native frame with a line outside system libraries and
// headers).
std::string thread_label(const ProcessSnapshot& p, int tid);

}  // namespace hangscan
