// Cycles of waits, and their sentences.
#include "group/deadlock.h"

#include <gtest/gtest.h>

#include "report/finding_words.h"
#include "report/member_words.h"

#include "group/analysis.h"
#include "job_builder.h"

namespace hangscan {
namespace {

using testing::py;

Frame native_at(std::string function, std::string module, std::string file, int line) {
  Frame f;
  f.function = std::move(function);
  f.module = std::move(module);
  f.file = std::move(file);
  f.line = line;
  return f;
}

ThreadSnapshot waiter(int tid, std::string name, std::vector<Frame> frames,
                      std::vector<WaitEdge> waits, std::string syscall) {
  ThreadSnapshot t;
  t.tid = tid;
  t.name = std::move(name);
  t.state = 'S';
  t.syscall = std::move(syscall);
  t.frames = std::move(frames);
  t.waits_on = std::move(waits);
  return t;
}

std::vector<Frame> locking(int line) {
  return {native_at("__lll_lock_wait", "/lib/x86_64-linux-gnu/libc.so.6", "lowlevellock.c", 49),
          native_at("lock", "/srv/bank", "/usr/include/c++/12/bits/std_mutex.h", 100),
          native_at("transfer", "/srv/bank", "/srv/bank.cpp", line)};
}

WaitEdge mutex_of(int pid, int owner) {
  return {"n1", pid, std::nullopt, "mutex 0x5000 held by thread " + std::to_string(owner), owner};
}

// Two threads that took two mutexes in opposite orders.
JobSnapshot bank_job() {
  JobSnapshot job;
  ProcessSnapshot p;
  p.host = "n1";
  p.pid = 4700;
  p.threads.push_back(waiter(4700, "bank", {}, {}, "futex"));
  p.threads.push_back(waiter(4712, "audit", locking(20), {mutex_of(4700, 4711)}, "futex"));
  p.threads.push_back(waiter(4711, "transfer", locking(14), {mutex_of(4700, 4712)}, "futex"));
  job.processes.push_back(p);
  return job;
}

TEST(Deadlock, TwoThreadsOnTwoMutexes) {
  JobSnapshot job = bank_job();
  auto found = find_deadlocks(job);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(deadlock_sentence(job, found[0]),
            "thread 4711 (transfer, bank.cpp:14) waits for a mutex held by thread 4712 (audit, "
            "bank.cpp:20), which waits for one held by 4711");
}

TEST(Deadlock, AnalysisKeepsTheCycleAsAFinding) {
  JobSnapshot job = bank_job();
  Analysis a = analyze(job, GroupOptions{});
  ASSERT_EQ(a.deadlock_findings.size(), 1u);
  const Finding& f = a.deadlock_findings[0];
  EXPECT_EQ(f.kind, FindingKind::deadlock);
  EXPECT_FALSE(f.flag);  // threads of one process
  EXPECT_EQ(f.members, (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(f.tids, (std::vector<int>{4711, 4712}));
  ASSERT_EQ(f.via.size(), 2u);
  EXPECT_EQ(f.via[0], &job.processes[0].threads[2].waits_on[0]);
  EXPECT_EQ(verdict_words(job, a).deadlocks,
            (std::vector<std::string>{
                "thread 4711 (transfer, bank.cpp:14) waits for a mutex held by "
                "thread 4712 (audit, bank.cpp:20), which waits for one held by 4711"}));
}

TEST(Deadlock, AChainOfOwnersThatEndsIsNoDeadlock) {
  JobSnapshot job;
  ProcessSnapshot p;
  p.host = "n1";
  p.pid = 4700;
  p.threads.push_back(waiter(4711, "a", locking(14), {mutex_of(4700, 4712)}, "futex"));
  p.threads.push_back(waiter(4712, "b", locking(20), {}, "read"));
  job.processes.push_back(p);
  EXPECT_TRUE(find_deadlocks(job).empty());
}

TEST(Deadlock, ParentWaitingForAChildThatWritesItsPipe) {
  JobSnapshot job;
  ProcessSnapshot parent, child;
  parent.host = child.host = "n1";
  parent.pid = 100;
  child.pid = 101;
  parent.threads.push_back(waiter(
      100, "python3",
      {py("_try_wait", "/usr/lib/python3.11/subprocess.py", 1917), py("<module>", "/t/p.py", 9)},
      {{"n1", 101, std::nullopt, "child 101 (wait4)", std::nullopt}}, "wait4"));
  parent.threads[0].is_main = true;
  child.threads.push_back(waiter(101, "python3", {py("child", "/t/p.py", 4)},
                                 {{"n1", 100, std::nullopt, "pipe:[77]", std::nullopt}}, "write"));
  child.threads[0].is_main = true;
  job.processes = {parent, child};
  auto found = find_deadlocks(job);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(deadlock_sentence(job, found[0]),
            "n1:100 (python3, p.py:9) waits for its child n1:101 (python3, p.py:4) to exit, which "
            "waits for n1:100 to read pipe:[77]");
  // Without the wait for a child, processes waiting on each other are the wait chains' story.
  job.processes[0].threads[0].waits_on[0].via = "tcp a -> b";
  EXPECT_TRUE(find_deadlocks(job).empty());
}

}  // namespace
}  // namespace hangscan
