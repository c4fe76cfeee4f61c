// Wait edges joined into chains and sentences.
#include "group/wait_graph.h"

#include <gtest/gtest.h>

#include "group/analysis.h"
#include "job_builder.h"
#include "report/finding_words.h"

namespace hangscan {
namespace {

using testing::py;
using testing::rank_process;

// The wait chains in words, as the writers show them.
std::vector<std::string> sentences(const JobSnapshot& job) {
  return finding_sentences(job, StackTrie(), wait_chain_findings(job));
}

WaitEdge edge(std::string host, int pid, std::string via) {
  return {std::move(host), pid, std::nullopt, std::move(via)};
}

ProcessSnapshot ring_rank(int rank, int pid, std::string syscall, std::vector<WaitEdge> waits,
                          int line, std::string host = "n1") {
  ProcessSnapshot p =
      rank_process(rank, pid, {py("main", "/job/tcp_ring.py", line)}, 'S', std::move(host));
  p.threads[0].syscall = std::move(syscall);
  p.threads[0].waits_on = std::move(waits);
  return p;
}

// The tcp_ring.py shape: world 5, rank 3 reads a pipe, everyone else recv()s from the left.
JobSnapshot token_ring() {
  JobSnapshot job;
  for (int r : {0, 1, 2, 4}) {
    int left = (r + 4) % 5;
    job.processes.push_back(
        ring_rank(r, 100 + r, "recvfrom", {edge("n1", 100 + left, "tcp x -> y")}, 40));
  }
  job.processes.push_back(ring_rank(3, 103, "read", {edge("n1", 99, "pipe:[77]")}, 36));
  return job;
}

TEST(WaitGraph, AChainIsToldInOrderWithItsRoot) {
  JobSnapshot job = token_ring();
  EXPECT_EQ(sentences(job),
            std::vector<std::string>{
                "ranks 2 -> 1 -> 0 -> 4 wait on rank 3, which waits on a pipe written by pid 99 "
                "(tcp_ring.py:36)"});
  EXPECT_EQ(process_waits(job).size(), 4u);
}

TEST(WaitGraph, AFanInNamesTheMembersAndTheSleeper) {
  JobSnapshot job;
  for (int r : {0, 1, 3}) {
    ProcessSnapshot p = ring_rank(r, 100 + r, "futex", {}, 20);
    ThreadSnapshot loop;
    loop.tid = 1000 + r;
    loop.syscall = "epoll_wait";
    for (int o = 0; o < 4; ++o) {
      if (o != r) loop.waits_on.push_back(edge("n1", 100 + o, "tcp a -> b"));
    }
    p.threads.push_back(loop);
    job.processes.push_back(std::move(p));
  }
  ProcessSnapshot sleeper = ring_rank(2, 102, "clock_nanosleep", {}, 33);
  ThreadSnapshot loop;
  loop.tid = 1002;
  loop.syscall = "epoll_wait";
  loop.waits_on = {edge("n1", 100, "tcp"), edge("n1", 101, "tcp"), edge("n1", 103, "tcp")};
  sleeper.threads.push_back(loop);
  job.processes.push_back(std::move(sleeper));
  EXPECT_EQ(sentences(job),
            std::vector<std::string>{"ranks 0-1,3 wait on rank 2, which sleeps (tcp_ring.py:33)"});
}

TEST(WaitGraph, ACycleIsSaidAsSuch) {
  JobSnapshot job;
  job.processes.push_back(ring_rank(0, 100, "recvfrom", {edge("n1", 101, "tcp")}, 1));
  job.processes.push_back(ring_rank(1, 101, "recvfrom", {edge("n1", 100, "tcp")}, 1));
  EXPECT_EQ(sentences(job),
            std::vector<std::string>{
                "ranks 0-1 wait on each other in a cycle (none of them waits outside it)"});
}

TEST(WaitGraph, TcpEdgesToAnotherNodeAreCompletedFromItsConnections) {
  JobSnapshot job;
  job.processes.push_back(ring_rank(
      0, 100, "recvfrom", {{"", {}, {}, "tcp 10.0.0.1:40312 -> 10.0.0.2:29502"}}, 1, "n1"));
  ProcessSnapshot far = ring_rank(1, 100, "clock_nanosleep", {}, 7, "n2");
  far.tcp_connections = {"10.0.0.2:29502 -> 10.0.0.9:1", "10.0.0.2:29502 -> 10.0.0.1:40312"};
  job.processes.push_back(std::move(far));
  link_wait_edges(job);
  const WaitEdge& e = job.processes[0].threads[0].waits_on[0];
  EXPECT_EQ(e, (WaitEdge{"n2", 100, 1, "tcp 10.0.0.1:40312 -> 10.0.0.2:29502"}));
  EXPECT_EQ(sentences(job),
            std::vector<std::string>{"rank 0 waits on rank 1, which sleeps (tcp_ring.py:7)"});
}

TEST(WaitGraph, NoEdgesNoSentence) {
  JobSnapshot job;
  job.processes.push_back(ring_rank(0, 100, "futex", {}, 1));
  EXPECT_TRUE(sentences(job).empty());
}

}  // namespace
}  // namespace hangscan
