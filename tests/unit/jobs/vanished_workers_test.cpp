// Forked workers that ended during the capture or exited with code 0 leave the job; zombies of
// another exit, ranks and workers that still run are kept.
#include "jobs/vanished_workers.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "proc/proc_files.h"

namespace hangscan {
namespace {

ProcessSnapshot member(int pid, const char* role, char state) {
  ProcessSnapshot p;
  p.pid = pid;
  p.ppid = static_cast<int>(::getpid());
  p.role = role;
  p.state = state;
  return p;
}

// A child that has exited with `code` and is a zombie until waited for.
int zombie_child(int code = 0) {
  int pid = ::fork();
  if (pid == 0) ::_exit(code);
  for (int i = 0; i < 2000; ++i) {
    auto st = read_stat(pid);
    if (st && st->state == 'Z') break;
    ::usleep(1000);
  }
  return pid;
}

TEST(DropVanishedWorkers, OnlyWorkersThatEndedLeave) {
  int self = static_cast<int>(::getpid());
  int zombie = zombie_child(3);
  int clean = zombie_child();  // a zombie when captured and still: exited with code 0
  int reaped = zombie_child();
  ::waitpid(reaped, nullptr, 0);
  int died_since = zombie_child();  // captured alive, a zombie now

  JobSnapshot job;
  ProcessSnapshot running = member(self, "worker", 'S');
  running.start_ticks = read_stat(self)->start_time;
  job.processes.push_back(running);
  job.processes.push_back(member(zombie, "worker", 'Z'));
  job.processes.push_back(member(clean, "idle", 'Z'));
  job.processes.push_back(member(reaped, "worker", 'Z'));
  job.processes.push_back(member(died_since, "idle", 'S'));
  job.processes.push_back(member(reaped, "rank", 'X'));
  job.processes.push_back(member(reaped + 100000, "worker", 'X'));
  drop_vanished_workers(job);

  ASSERT_EQ(job.processes.size(), 3u);
  EXPECT_EQ(job.processes[0].pid, self);
  EXPECT_EQ(job.processes[1].pid, zombie);
  EXPECT_EQ(job.processes[2].role, "rank");
  ASSERT_EQ(job.diagnostics.size(), 2u);
  EXPECT_EQ(job.diagnostics[0].message,
            fmt::format("3 forked workers of pid {} ended during the capture: left out", self));
  EXPECT_EQ(job.diagnostics[0].severity, Diagnostic::Severity::info);
  EXPECT_EQ(
      job.diagnostics[1].message,
      fmt::format("1 forked worker of pid {} exited with code 0 (not reaped yet): left out", self));
  ::waitpid(zombie, nullptr, 0);
  ::waitpid(clean, nullptr, 0);
  ::waitpid(died_since, nullptr, 0);
}

}  // namespace
}  // namespace hangscan
