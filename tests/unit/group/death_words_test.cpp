// The death sentence: the signal, what the cgroup counted, and the command that reads the core.
#include <gtest/gtest.h>

#include "group/death_findings.h"

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
  Death d = killed(11, "SIGSEGV");
  d.core_dumped = true;
  d.core = "/var/cores/core-python3.42";
  EXPECT_EQ(death_words(d),
            "was killed by SIGSEGV (core dumped); read its core with: hangscan core "
            "/var/cores/core-python3.42");
  d.core = "core.42";
  EXPECT_EQ(death_words(d),
            "was killed by SIGSEGV (core dumped); read its core with: hangscan core core.42 (in "
            "its working directory)");
  d.core = "systemd-coredump (coredumpctl info 42)";
  EXPECT_EQ(death_words(d),
            "was killed by SIGSEGV (core dumped); its core went to systemd-coredump (coredumpctl "
            "info 42)");
}

TEST(DeathWords, ASigkillTheCgroupCountedIsSaid) {
  Death d = killed(9, "SIGKILL");
  EXPECT_EQ(death_words(d), "was killed by SIGKILL");
  d.detail = "its memory cgroup /hs counts 1 OOM kill (memory.oom_control oom_kill)";
  EXPECT_EQ(death_words(d),
            "was killed by SIGKILL (its memory cgroup /hs counts 1 OOM kill (memory.oom_control "
            "oom_kill))");
}

}  // namespace
}  // namespace hangscan
