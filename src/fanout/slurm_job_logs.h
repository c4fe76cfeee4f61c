// `--slurm-job ID --job-logs`: the job's own output files, as Slurm names them.
//
// Why: a batch job's StdOut/StdErr (slurm-%j.out by default) holds what srun and slurmstepd said
// about the job (killed tasks, time limits, OOM kills) and, with srun --label, every rank's lines.
// The job's owner chooses these paths and hangscan often runs as root, so each file is read with
// the job's user's file rights (proc/target_file.h), never hangscan's.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hangscan/result.h"
#include "logs/log_reader.h"

namespace hangscan {

// What `scontrol show job` says of the job's output: its user and group ids, the paths (with
// Slurm's per-task and per-node patterns %t, %n, %N left in them: scontrol expands only the
// job's own, such as %j and %x) and where its batch step ran.
struct JobOutputFields {
  std::optional<unsigned> uid;
  std::optional<unsigned> gid;
  std::vector<std::string> paths;  // StdOut, then StdErr when it differs
  bool batch = false;              // BatchFlag=1: the paths are the batch step's
  std::string batch_host;          // BatchHost=: the node the batch step ran on
};
JobOutputFields parse_job_output_fields(std::string_view scontrol_show_job);

// Where one task of a step ran, as Slurm's output file patterns name it.
struct TaskPlace {
  unsigned task = 0;        // %t: the task's rank in the step
  unsigned node_index = 0;  // %n: the node's index among the step's nodes
  std::string host;         // %N: the node's short host name (slurmd's, not the node's name)
  // %j, %s, %u, %x (and %J, "job.step"): empty leaves them as written (scontrol already
  // expanded the job's own in StdOut; srun's -o names them unexpanded).
  std::string job_id, step_id, user, job_name;
};

// Why: Slurm's stepd names a per-task output file by expanding %t, %n and %N (with an optional
// zero-padding width, "%3t"), the job's %j, %s, %u, %x and "%%"; a name holding a backslash is
// not expanded (Slurm's "\\"). Other patterns are left as they are.
std::string expand_task_pattern(std::string_view pattern, const TaskPlace& place);

// What an srun command line (/proc/PID/cmdline) names for its tasks' files, before its command:
// -o/--output, -e/--error and -D/--chdir in getopt's spellings ("-o F", "-oF", "-lo F",
// "--output=F", "--output F"); empty when not given.
// Why: a step's per-task files are named only on its srun's command line (scontrol and sacct
// of Slurm 22.05 show no StdOut for a step).
struct SrunFiles {
  std::string output, error, chdir;
};
SrunFiles parse_srun_files(const std::vector<std::string>& argv);

// The job's output files and what stood in the way of finding them (scontrol did not answer,
// the job's user unknown, a step's srun on another host, no file at all): each an Error with
// its hint, for the caller to word.
struct JobOutputLogs {
  std::vector<LogText> logs;
  std::vector<Error> problems;
};

// The job's StdOut and StdErr read as its user (bounded); a file that could not be read is a
// LogText with its error. No logs (and the reason a problem) when scontrol does not answer.
// Also every running step's per-task files its srun names (-o/-e, or SLURM_STDOUTMODE and
// SLURM_STDERRMODE in its environment), expanded for each task of the step, when that srun
// runs on this host (`scontrol show step`'s SrunHost:Pid): its command line and environment
// read as the job's user could, relative names resolved in its working directory.
JobOutputLogs slurm_job_output_logs(const std::string& job_id);

}  // namespace hangscan
