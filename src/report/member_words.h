// Members, deaths, waiting times and deadlock cycles in words: the names the verdict's sentences
// use, and the sentences of a group's wait and of a cycle of waits.
//
// Why in report/: the engine (group/) returns members as process indexes, deaths, wait spreads
// and deadlock cycles (group/deadlock.h: members, tids, wait edges) as data; the writers say
// them, the same way in every sentence and output.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "group/analysis.h"
#include "group/deadlock.h"
#include "group/wait_spread.h"
#include "hangscan/model.h"

namespace hangscan {

// "rank 2", or "n1:1234" / "pid 1234" for a process without rank.
std::string member_name(const ProcessSnapshot& p);
// "rank 2", "ranks 0-1,3", "process n1:12", "processes n1:12,n1:13" or "40 processes".
std::string describe_members(const JobSnapshot& job, const std::vector<std::size_t>& members);
// The member set as a bracket label for trees and edges: "0-1,3", plus "n1:1234" entries for
// members without rank ("0-3,n1:99"); long rankless lists are cut to a count.
std::string member_set_label(const JobSnapshot& job, const std::vector<std::size_t>& members);

// "21:03:11": a time of a death or of a launcher's stop, on this machine's clock as the
// kernel log's times are said.
std::string clock_words(double unix_seconds);

// "was killed by the kernel OOM killer at 21:03:11 (memory cgroup /x: limit 200 MiB, rss 208
// MiB)", "was killed by SIGKILL", "exited with code 3", "crashed at ...: segfault at 0 ...".
std::string death_words(const Death& d);

// "ranks 0-1,3 in all_reduce (job.py:68): blocked 310.2-313.0 s, arrived over 2.8 s, rank 1 last".
std::string wait_sentence(const JobSnapshot& job, const Group& g, const WaitSpread& w);

// "2.8 s", "312 s", "4312 s (1 h 11 min)": how long-ago figures are shown.
std::string seconds_words(double s);

// "thread 4711 (main, bank.cpp:14) waits for a mutex held by thread 4712 (audit, bank.cpp:20),
// which waits for one held by 4711": the sentence for one cycle (report/finding_words.h makes the
// deadlock findings' words with it, docs/output-schema.md "deadlocks").
std::string deadlock_sentence(const JobSnapshot& job, const Deadlock& d);

// "4712 (audit, bank.cpp:20)": a thread's id, its name and where it is (its innermost Python
// frame with a line, else its innermost native frame with a line outside system libraries and
// headers).
std::string thread_label(const ProcessSnapshot& p, int tid);

}  // namespace hangscan
