// The death sentence: the signal, what the cgroup counted, and the command that reads the core.
#include <gtest/gtest.h>

#include <utility>

#include "report/member_words.h"

namespace hangscan {
namespace {

Death killed(int sig, const char* name) {
  Death d;
  d.how = "killed";
  d.signal = sig;
  d.signal_name = name;
  return d;
}

TEST(DeathWords, ACoreFileEndsWithTheCommandThatReadsIt) {
  // Where the core went (Death::core), and the words for it.
  const std::pair<const char*, const char*> cases[] = {
      {"/var/cores/core-python3.42",
       "was killed by SIGSEGV (core dumped); read its core with: hangscan core "
       "/var/cores/core-python3.42"},
      {"core.42",
       "was killed by SIGSEGV (core dumped); read its core with: hangscan core core.42 (in "
       "its working directory)"},
      {"systemd-coredump (coredumpctl info 42)",
       "was killed by SIGSEGV (core dumped); its core went to systemd-coredump (coredumpctl "
       "info 42)"}};
  Death d = killed(11, "SIGSEGV");
  d.core_dumped = true;
  for (const auto& [core, words] : cases) {
    d.core = core;
    EXPECT_EQ(death_words(d), words) << core;
  }
}

TEST(DeathWords, ASigkillTheCgroupCountedIsSaid) {
  Death d = killed(9, "SIGKILL");
  EXPECT_EQ(death_words(d), "was killed by SIGKILL");
  d.detail = "its memory cgroup /hs counts 1 OOM kill (memory.oom_control oom_kill)";
  EXPECT_EQ(death_words(d),
            "was killed by SIGKILL (its memory cgroup /hs counts 1 OOM kill (memory.oom_control "
            "oom_kill))");
}

TEST(DeathWords, SlurmsRecordOfTheStep) {
  Death d = killed(9, "SIGKILL");
  d.slurm_step = "42.1";
  d.slurm_state = "CANCELLED";
  d.slurm_exit_code = "0:9";
  EXPECT_EQ(death_words(d), "was killed by SIGKILL; Slurm: step 42.1 CANCELLED (exit code 0:9)");
  Death only;
  only.how = "slurm";
  only.slurm_step = "42.1";
  only.slurm_state = "OUT_OF_MEMORY";
  only.slurm_exit_code = "0:125";
  EXPECT_EQ(death_words(only), "died; Slurm: step 42.1 OUT_OF_MEMORY (exit code 0:125)");
  only.slurm_state = "RUNNING";  // a step whose other tasks still run: no exit code yet
  only.slurm_exit_code = "0:0";
  EXPECT_EQ(death_words(only), "died; Slurm: step 42.1 RUNNING");
  // A coredumpctl entry is said as it is, after Slurm's record.
  d.core_dumped = true;
  d.core =
      "systemd-coredump (present, 1.0 MiB); write it out with: coredumpctl dump 7 -o core.7, "
      "then: hangscan core core.7";
  EXPECT_EQ(death_words(d),
            "was killed by SIGKILL (core dumped); Slurm: step 42.1 CANCELLED (exit code 0:9); its "
            "core went to systemd-coredump (present, 1.0 MiB); write it out with: coredumpctl "
            "dump 7 -o core.7, then: hangscan core core.7");
}

}  // namespace
}  // namespace hangscan
