// A job's logs joined with a capture of it (`--logs` on dump, core, --slurm-job and pdsh): each
// rank's last words in its log beside where its stack stands now.
//
// Why: the stacks say where every rank is; the logs say what happened before. The same rank's
// line and frame side by side answer "what was it doing when it stopped" in one sentence.
// Facts only (which line, how long before the capture, which frame); the words are made by
// log_writers.h.
#pragma once

#include <string>
#include <vector>

#include "group/analysis.h"
#include "hangscan/model.h"
#include "logs/log_events.h"

namespace hangscan {

// One entry per rank that has a log: its last recognised event (log_patterns.h), or, when none
// of its lines was one, its file's last line; with the capture's time minus the line's (the
// time printed on it, else the file's modification time for a file's last line) and the
// rank's main thread's innermost frame with a line. Sorted by rank.
std::vector<RankLastLog> join_logs(const LogSet& logs, const JobSnapshot& job);

// Events that name a pid but no rank (torchrun's stop lines, the kernel's OOM kills, NCCL WARN
// lines of a process without an Init line) take the rank of the captured process with that pid:
// the capture's own pid -> rank map. Why: launchers and the kernel speak of pids, the report of
// ranks. Only when exactly one captured rank holds the pid (pids repeat across hosts), on the
// event's host when it names one.
void ranks_from_capture(LogSet& logs, const JobSnapshot& job);

// A death the analysis could not tie to a rank (Finding::rank empty: the kernel's record of a
// reaped pid, with no single missing rank to be its) takes the rank the logs name for its pid:
// a line naming both (torchrun's failure summary "rank : R ... (pid: P)", NCCL's Init COMPLETE),
// on the death's host when both name one (short names compared), only when the logs name
// exactly one rank for it. Why: a pid tied to a rank in the job's own words is exact; the report
// then says which rank died, not "one of ranks 1,2".
void ranks_of_deaths(const LogSet& logs, Analysis& a);

// A death's living others whom the launcher's log says it is ending (torchrun's "Sending
// process PID closing signal SIGTERM" for each of them, ranked by ranks_from_capture) are
// marked so (Finding::stopped; the writers make the sentences from it). Why: after one rank died
// torchrun ends the others; saying they "wait for it" would be false.
void mark_launcher_stops(const LogSet& logs, const JobSnapshot& job, Analysis& a);

// "load_batch (data.py:88)": a process's main thread, its innermost Python frame with a line,
// else its innermost frame with a line, else its innermost function; "" without threads.
std::string main_frame_place(const ProcessSnapshot& p);

}  // namespace hangscan
