// The job loop on real processes and real (missing) files: what one target's failure becomes,
// and that a good target is captured once through the loop.
#include "jobs/job_loop.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "jobs/capture_flags.h"
#include "jobs/local_jobs.h"
#include "proc/proc_files.h"
#include "util/diagnostic.h"

namespace hangscan {
namespace {

using namespace std::chrono_literals;

// /bin/sleep in a child, killed when the test ends. `orphan`: started through a child that
// exits at once, so it is not below this process (discovery leaves out hangscan's own
// descendants, its helpers); its pid comes back through a pipe.
class Kid {
 public:
  explicit Kid(bool orphan = false) : orphan_(orphan) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_t child = fork();
    if (child == 0) {
      close(fds[0]);
      if (orphan && fork() != 0) _exit(0);
      int me = getpid();
      if (write(fds[1], &me, sizeof(me)) != sizeof(me)) _exit(126);
      close(fds[1]);
      execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    if (read(fds[0], &pid_, sizeof(pid_)) != sizeof(pid_)) pid_ = -1;
    close(fds[0]);
    if (orphan) waitpid(child, nullptr, 0);
  }
  ~Kid() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    if (!orphan_) {
      waitpid(pid_, nullptr, 0);
      return;
    }
    auto end = std::chrono::steady_clock::now() + 10s;  // reaped by init
    while (kill(pid_, 0) == 0 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(1ms);
  }
  Kid(const Kid&) = delete;
  Kid& operator=(const Kid&) = delete;
  int pid() const { return pid_; }
  // Waits (deadline 10 s) until the child sleeps in /bin/sleep.
  bool sleeping() const {
    auto end = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < end) {
      auto st = read_stat(pid_);
      if (st && st->state == 'S' && st->comm == "sleep") return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

 private:
  bool orphan_ = false;
  int pid_ = -1;
};

// Above any pid_max Linux allows minus one: no process has it.
constexpr int kNoSuchPid = 4194303;

TEST(JobLoop, LiveProcessIsCapturedAndRunsOn) {
  Kid kid(true);
  ASSERT_TRUE(kid.sleeping());
  LocalJobRequest req;
  req.pids = {kid.pid()};
  req.run.capture.python = false;
  LocalJob run = run_local_job(req);
  ASSERT_TRUE(run.rejected.empty()) << run.rejected[0].error.what();
  ASSERT_FALSE(run.error) << run.error->what();
  ASSERT_TRUE(run.ran);
  ASSERT_EQ(run.job.processes.size(), 1u);
  const ProcessSnapshot& p = run.job.processes[0];
  EXPECT_EQ(p.pid, kid.pid());
  ASSERT_EQ(p.threads.size(), 1u);
  EXPECT_EQ(p.threads[0].tid, kid.pid());
  for (const auto& d : p.diagnostics)
    EXPECT_NE(d.severity, Diagnostic::Severity::error) << d.message;
  EXPECT_TRUE(kid.sleeping());  // released: it sleeps again, not ptrace-stopped
}

TEST(JobLoop, MissingExplicitPidIsRejectedWithItsReason) {
  LocalJobRequest req;
  req.pids = {kNoSuchPid};
  LocalJob run = run_local_job(req);
  EXPECT_FALSE(run.ran);
  EXPECT_FALSE(run.error);
  ASSERT_EQ(run.rejected.size(), 1u);
  EXPECT_EQ(run.rejected[0].pid, kNoSuchPid);
  EXPECT_EQ(run.rejected[0].error.code, Errc::no_such_process);
}

TEST(JobLoop, BadMatchPatternIsAUsageError) {
  LocalJobRequest req;
  req.match = "(";
  LocalJob run = run_local_job(req);
  EXPECT_FALSE(run.ran);
  ASSERT_TRUE(run.error);
  EXPECT_EQ(run.error->code, Errc::usage);
}

TEST(JobLoop, UnopenableMemberIsItsOwnSnapshotWithHost) {
  std::vector<JobMember> members(2);
  members[0].process.pid = kNoSuchPid;
  members[0].process.rank = 7;
  members[0].process.role = kRoleRank;
  Kid kid;
  ASSERT_TRUE(kid.sleeping());
  members[1].process.pid = kid.pid();
  JobOptions o;
  o.capture.python = false;
  o.host = "n1";
  SymbolCache symbols;
  JobSnapshot job =
      run_job(members, o, symbols, {make_diagnostic(Diagnostic::Severity::warning, "found")});
  ASSERT_EQ(job.processes.size(), 2u);
  const ProcessSnapshot& gone = job.processes[0];
  EXPECT_EQ(gone.pid, kNoSuchPid);
  EXPECT_EQ(gone.rank, 7);  // the rank stays in the report, with the reason
  ASSERT_EQ(gone.diagnostics.size(), 1u);
  EXPECT_EQ(gone.diagnostics[0].severity, Diagnostic::Severity::error);
  EXPECT_EQ(gone.diagnostics[0].pid, kNoSuchPid);
  EXPECT_EQ(gone.diagnostics[0].host, "n1");
  EXPECT_EQ(gone.host, "n1");
  EXPECT_EQ(job.processes[1].pid, kid.pid());
  EXPECT_EQ(job.processes[1].threads.size(), 1u);
  ASSERT_EQ(job.diagnostics.size(), 1u);
  EXPECT_EQ(job.diagnostics[0].message, "found");
  EXPECT_EQ(job.diagnostics[0].host, "n1");
}

TEST(JobLoop, PassedDeadlineLeavesMembersUncaptured) {
  std::vector<JobMember> members(1);
  members[0].process.pid = 1;
  JobOptions o;
  o.deadline = Deadline::after(0ms);
  SymbolCache symbols;
  JobSnapshot job = run_job(members, o, symbols);
  ASSERT_EQ(job.processes.size(), 1u);
  ASSERT_EQ(job.processes[0].diagnostics.size(), 1u);
  EXPECT_EQ(job.processes[0].diagnostics[0].message,
            "pid 1 not captured: the agent's deadline passed");
  EXPECT_EQ(job.processes[0].diagnostics[0].hint, "raise --timeout");
}

TEST(JobLoop, UnreadableCoreIsAJobDiagnostic) {
  JobSnapshot job = run_core_job({"/nonexistent/core.rank3"}, JobOptions{});
  EXPECT_TRUE(job.processes.empty());
  ASSERT_EQ(job.diagnostics.size(), 1u);
  EXPECT_EQ(job.diagnostics[0].severity, Diagnostic::Severity::error);
  EXPECT_NE(job.diagnostics[0].message.find("/nonexistent/core.rank3"), std::string::npos)
      << job.diagnostics[0].message;
}

TEST(JobLoop, RankFromFileName) {
  EXPECT_EQ(rank_from_file_name("/tmp/core.rank3"), 3);
  EXPECT_EQ(rank_from_file_name("rank-12.core"), 12);
  EXPECT_EQ(rank_from_file_name("dir.rank9/core_rank_0.zst"), 0);
  EXPECT_EQ(rank_from_file_name("core.1234"), std::nullopt);
  EXPECT_EQ(rank_from_file_name("frank3.core"), std::nullopt);
}

TEST(CaptureFlags, LiveAndCoreOptions) {
  CaptureFlags f;
  f.unwinder = "libunwind";
  f.locals = true;
  CaptureOptions live = live_capture_options(f);
  EXPECT_EQ(live.unwinder, UnwinderKind::libunwind);
  EXPECT_FALSE(live.merge_native);
  EXPECT_TRUE(live.locals);
  EXPECT_TRUE(live.kernel_stacks);
  CaptureOptions core = core_capture_options(f);
  EXPECT_TRUE(core.merge_native);
  EXPECT_FALSE(core.kernel_stacks);
  f.python_only = true;
  f.no_python = true;
  EXPECT_FALSE(core_capture_options(f).merge_native);
  EXPECT_FALSE(core_capture_options(f).python);
  f.native = true;
  f.nonblocking = true;
  EXPECT_EQ(capture_flag_args(f),
            (std::vector<std::string>{"--unwinder", "libunwind", "--native", "--locals",
                                      "--nonblocking", "--no-python"}));
  // --no-bpf: no quiet path here, and the agents are told so.
  f.no_bpf = true;
  EXPECT_FALSE(live_capture_options(f).quiet);
  EXPECT_EQ(capture_flag_args(f).back(), "--no-bpf");
}

TEST(CaptureFlags, QuietUnlessTheEnvironmentSaysNoBpf) {
  CaptureFlags f;
  ::unsetenv("HANGSCAN_NO_BPF");
  EXPECT_TRUE(live_capture_options(f).quiet);
  EXPECT_FALSE(core_capture_options(f).quiet);
  ::setenv("HANGSCAN_NO_BPF", "1", 1);
  EXPECT_FALSE(live_capture_options(f).quiet);
  EXPECT_EQ(capture_flag_args(f).back(), "--no-bpf");  // pdsh and ssh drop the environment
  ::unsetenv("HANGSCAN_NO_BPF");
}

}  // namespace
}  // namespace hangscan
