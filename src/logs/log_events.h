// What a job's logs said, as data: events read from lines, the files they came from, and the
// findings drawn from them (issue 35, "The job's own words").
//
// Why data: the same findings feed the text report, the JSON document and (later) the join with
// a capture's stacks; the words are made by the writers (log_writers.h), never here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hangscan {

// One kind per thing a producer says. The producers and their source files are named in
// log_patterns.cpp, next to each pattern.
enum class LogKind {
  collective_timeout,  // PyTorch NCCL watchdog: WorkNCCL(SeqNum=S, OpType=OP) timed out
  seq_status,          // PyTorch NCCL: "last enqueued NCCL work: E, last completed NCCL work: C"
  dump_signal,         // PyTorch NCCL: a dump signal due to a collective timeout from rank R
  gloo_timeout,        // gloo: "Timed out waiting Nms for recv|send operation to complete"
  peer_closed,         // gloo: "Connection closed by peer ADDR"
  exception,           // a Python traceback's exception line (with its innermost frame)
  cuda_error,          // "CUDA error: ..." / "CUDA out of memory"
  nccl_warn,           // NCCL: "HOST:PID:TID [DEV] NCCL WARN ..."
  nccl_init,           // NCCL: "... Init COMPLETE" (ties HOST:PID to a rank)
  torchrun_failure,    // torchrun's ChildFailedError summary: the root cause's rank and exit
  torchrun_stop,       // torchrun: "Sending process PID closing signal SIG" (ending the job)
  slurm_cancelled,     // slurmstepd: "*** JOB|STEP ID ON NODE CANCELLED AT T DUE TO REASON ***"
  srun_task,           // srun: "error: NODE: task N: Killed|Out Of Memory|Exited with exit code C"
  slurm_oom,           // slurmstepd: "Detected N oom_kill event(s) in StepId=..."
  kernel_oom,          // the kernel: "Out of memory: Killed process PID (COMM)" and the cgroup form
};

// A failure kind ends or breaks a rank; the others are progress reports or context.
bool is_failure(LogKind kind);
// The kinds whose own line names a pid together with its rank (torchrun's failure summary,
// NCCL's Init COMPLETE): the logs' exact pid -> rank pairs.
bool ties_pid_to_rank(LogKind kind);
// A stable lower-case name for JSON and text ("collective_timeout").
const char* log_kind_name(LogKind kind);

struct LogEvent {
  LogKind kind = LogKind::exception;
  std::size_t file = 0;        // index into LogSet::files
  std::uint64_t line = 0;      // 1-based line of the file where the event ends
  std::optional<double> time;  // seconds since the epoch (UTC), when the line carries a date
  std::optional<int> rank;     // from the line, else the file, else the capture's pid -> rank
  std::optional<int> pid;
  std::string host;
  std::optional<int> pg;         // process group id
  std::optional<long long> seq;  // the collective's sequence number
  std::optional<long long> last_enqueued;
  std::optional<long long> last_completed;
  std::optional<int> exit_code;
  std::optional<int> peer_rank;  // a rank the line names (dump signal from rank R)
  std::string op;                // ALLREDUCE, recv, Killed, TIME LIMIT, ...; an exception's
                                 // "communication" when it is a lost peer or a timeout
  std::string what;              // the salient words: the exception line, the reason
  std::string where;             // a traceback's innermost frame: "FILE:LINE in FUNC"
  std::string text;              // the line itself, cut to kMaxEventText bytes
};

inline constexpr std::size_t kMaxEventText = 400;

struct LogFile {
  std::string path;         // as given (or found in a directory)
  std::optional<int> rank;  // from the file's name, when it names one
  std::uint64_t bytes = 0;  // read (uncompressed)
  std::uint64_t lines = 0;
  std::uint64_t cut_lines = 0;  // lines longer than the reader's limit, cut
  bool compressed = false;
  std::string error;  // why the file was not (fully) read; "" when it was
  // Its last line that is not blank (cut to kMaxEventText), recognised or not: a rank's last
  // words when none of its lines was an event. And when the file was last written.
  std::string last_line;
  std::uint64_t last_line_number = 0;
  std::optional<double> modified;  // seconds since the epoch
  // The same per launcher label in an interleaved file ("[rank3]:", srun --label's "3: "):
  // each labelled rank's last line that is not blank, with its line number.
  std::map<int, std::pair<std::uint64_t, std::string>> label_last_lines;
};

struct LogSet {
  std::vector<LogFile> files;
  std::vector<LogEvent> events;      // in file order, then line order
  std::uint64_t dropped_events = 0;  // past the reader's bound on events
};

// One process group's collective sequence numbers: who enqueued least.
struct LaggingRanks {
  int pg = 0;
  std::vector<int> ranks;                  // the ranks with the lowest last-enqueued number
  long long last_enqueued = 0;             // theirs
  long long others_enqueued = 0;           // the highest among the others
  std::vector<int> timed_out;              // ranks that reported a collective timeout in this PG
  std::optional<long long> timed_out_seq;  // the collective they timed out in
  std::string op;                          // its operation
};

struct LogFindings {
  std::optional<std::size_t> first_failure;  // index into LogSet::events
  std::vector<LaggingRanks> lagging;
  // Ranks with a log file of their own (or seen in lines) that reported no failure while
  // others reported timeouts: the usual culprit of a collective timeout.
  std::vector<int> silent;
  std::vector<int> failed;  // ranks that reported a failure
  // Ranks that raised an exception of their own, while the other failed ranks only lost a
  // peer or timed out in communication (their failures are consequences).
  std::vector<int> raised;
  std::vector<int> communication_only;  // failed ranks whose every failure is a consequence
  std::vector<std::size_t> deaths;      // events saying a rank or task died and how
  std::vector<int> suspects;            // sorted ranks: lagging, then silent
  std::optional<int> world;             // given, else highest rank seen + 1
};

}  // namespace hangscan
