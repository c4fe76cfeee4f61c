// Pool roles: idle workers from their stacks, the straggler rule, the owner's wait.
#include "group/roles.h"

#include <gtest/gtest.h>

#include "report/finding_words.h"

#include "group/analysis.h"
#include "job_builder.h"

namespace hangscan {
namespace {

using namespace hangscan::testing;

const std::string kLib = "/usr/lib/python3.11/multiprocessing/";

// A forked pool worker of pid 100: the parent's outer frames, then `inner` (innermost first).
ProcessSnapshot worker(int pid, std::vector<Frame> inner, char state = 'S') {
  ProcessSnapshot p = rank_process(0, pid, {}, state);
  p.rank.reset();
  p.role = "worker";
  p.ppid = 100;
  inner.push_back(py("worker", kLib + "pool.py", 125));
  inner.push_back(py("BaseProcess.run", kLib + "process.py", 108));
  inner.push_back(py("BaseProcess._bootstrap", kLib + "process.py", 314));
  inner.push_back(py("main", "/t/pool_hang.py", 64));
  inner.push_back(py("<module>", "/t/pool_hang.py", 68));
  p.threads[0].frames = std::move(inner);
  return p;
}

JobSnapshot pool_job() {
  JobSnapshot job;
  ProcessSnapshot owner =
      rank_process(0, 100,
                   {py("Condition.wait", "/usr/lib/python3.11/threading.py", 320),
                    py("main", "/t/pool_hang.py", 64)});
  owner.rank.reset();
  owner.role = "owner";
  job.processes.push_back(owner);
  job.processes.push_back(worker(101, {py("SimpleQueue.get", kLib + "queues.py", 364)}));
  job.processes.push_back(worker(102, {py_builtin("time.sleep"), py("work", "/t/pool_hang.py", 29),
                                       py("mapstar", kLib + "pool.py", 48)}));
  job.processes.push_back(
      worker(103, {py("Connection._recv", kLib + "connection.py", 378),
                   py("_ConnectionBase.recv_bytes", kLib + "connection.py", 215),
                   py("SimpleQueue.get", kLib + "queues.py", 365)}));
  job.processes.push_back(worker(104, {}));  // between two tasks, in the loop itself
  return job;
}

TEST(PoolRoles, IdleWorkersWhicheverFrameOfTheQueueReadTheyAreIn) {
  JobSnapshot job = pool_job();
  mark_idle_workers(job);
  EXPECT_EQ(job.processes[0].role, "owner");
  EXPECT_EQ(job.processes[1].role, "idle");
  EXPECT_EQ(job.processes[2].role, "worker");
  EXPECT_EQ(job.processes[3].role, "idle");
  EXPECT_EQ(job.processes[4].role, "idle");
}

TEST(PoolRoles, TheWorkerInTheTaskIsTheOnlySuspectAndItsOwnerWaitsForIt) {
  JobSnapshot job = pool_job();
  mark_idle_workers(job);
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(verdict_words(job, a).suspect_reasons,
            std::vector<std::string>{
                "n1:102, a worker of n1:100, is in work (pool_hang.py:29) -> time.sleep while 3 "
                "other workers are idle"});
  EXPECT_EQ(a.suspect_members, std::vector<std::size_t>{2});
  EXPECT_EQ(verdict_words(job, a).wait_chains,
            std::vector<std::string>{
                "n1:100 waits for its worker process n1:102, in work (pool_hang.py:29) -> "
                "time.sleep"});
  EXPECT_TRUE(verdict_words(job, a).notes.empty());
  EXPECT_EQ(a.grouped, std::vector<std::size_t>{2});
}

TEST(PoolRoles, AProducerBesideItsDeadConsumer) {
  JobSnapshot job = pool_job();
  job.processes.resize(1);
  ProcessSnapshot producer =
      worker(105, {py("Queue.put", kLib + "queues.py", 94), py("produce", "/t/q.py", 40)});
  producer.threads[0].frames.edit().erase(producer.threads[0].frames.edit().begin() +
                                          2);  // no pool loop
  ProcessSnapshot consumer = worker(106, {}, 'Z');
  consumer.threads.clear();
  job.processes.push_back(producer);
  job.processes.push_back(consumer);
  mark_idle_workers(job);
  Analysis a = analyze(job, GroupOptions{});
  ASSERT_EQ(verdict_words(job, a).suspect_reasons.size(), 2u);
  EXPECT_EQ(verdict_words(job, a).suspect_reasons[0],
            "n1:105, a worker of n1:100, is in produce (q.py:40) -> Queue.put (queues.py:94) "
            "while n1:106, another worker, is dead");
  EXPECT_EQ(a.suspect_members, (std::vector<std::size_t>{1, 2}));
  EXPECT_TRUE(verdict_words(job, a).notes.empty());
}

TEST(PoolRoles, AnOnlyWorkerIsTheStoryOnlyWhenItsOwnerWaitsForIt) {
  JobSnapshot job = pool_job();
  job.processes.resize(3);
  job.processes.erase(job.processes.begin() + 1);  // the owner and the worker in work()
  job.processes[0].threads[0].frames = {py("Popen.poll", kLib + "popen_fork.py", 27),
                                        py("main", "/t/pool_hang.py", 64)};
  Analysis joined = analyze(job, GroupOptions{});
  EXPECT_EQ(verdict_words(job, joined).suspect_reasons,
            std::vector<std::string>{
                "n1:102, the only worker of n1:100, is in work (pool_hang.py:29) -> time.sleep"});
  // An owner busy in its own code is not waiting for its worker: nobody is named for it.
  job.processes[0].threads[0].frames = {py("serve", "/t/pool_hang.py", 70)};
  EXPECT_TRUE(verdict_words(job, analyze(job, GroupOptions{})).suspect_reasons.empty());
}

TEST(PoolRoles, LibraryAndUserFrames) {
  EXPECT_FALSE(is_user_frame(py("get", kLib + "queues.py", 1)));
  EXPECT_FALSE(is_user_frame(py("fetch", "/usr/lib/python3/dist-packages/torch/x.py", 1)));
  EXPECT_FALSE(is_user_frame(py("f", "/venv/lib64/python3.12/site-packages/a.py", 1)));
  EXPECT_FALSE(is_user_frame(py("<module>", "<frozen runpy>", 1)));
  EXPECT_FALSE(is_user_frame(py_builtin("time.sleep")));
  EXPECT_TRUE(is_user_frame(py("work", "/home/u/pool.py", 3)));
}

}  // namespace
}  // namespace hangscan

namespace hangscan {
namespace {

using namespace hangscan::testing;

// Workers a forkserver (pid 150, a child of the owner) forked: discovery made them ranks of
// unknown number; their stacks run the pool's loop, so they are the owner's workers.
TEST(PoolRoles, ForkserverWorkersBelongToTheForkserversParent) {
  JobSnapshot job = pool_job();
  job.processes[0].role = "process";
  ProcessSnapshot server = rank_process(0, 150, {}, 'S');
  server.rank.reset();
  server.role = "helper";
  server.ppid = 100;
  server.cmdline = {"python3", "-c", "from multiprocessing.forkserver import main; main(6)"};
  for (std::size_t i = 1; i < job.processes.size(); ++i) {
    job.processes[i].role = "rank";
    job.processes[i].ppid = 150;
  }
  ProcessSnapshot rank = job.processes[1];  // a rank with a number stays a rank
  rank.pid = 105;
  rank.rank = 0;
  job.processes.push_back(server);
  job.processes.push_back(rank);
  mark_started_workers(job);
  mark_idle_workers(job);
  std::vector<std::string> roles;
  for (const ProcessSnapshot& p : job.processes) roles.push_back(p.role);
  EXPECT_EQ(roles, (std::vector<std::string>{"owner", "idle", "worker", "idle", "idle", "helper",
                                             "rank"}));
  Analysis a = analyze(job, GroupOptions{});
  EXPECT_EQ(a.suspect_members, std::vector<std::size_t>{2});
  EXPECT_EQ(verdict_words(job, a).wait_chains,
            std::vector<std::string>{"n1:100 waits for its worker process n1:102, "
                                     "in work (pool_hang.py:29) -> time.sleep"});
}

}  // namespace
}  // namespace hangscan
