// The kernel log's OOM-kill and crash records, wait statuses and core patterns, on lines as
// this machine's kernel writes them.
#include "proc/deaths.h"

#include <csignal>

#include <gtest/gtest.h>

namespace hangscan {
namespace {

constexpr const char* kLog =
    "6,1201,3308761620,-;python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0\n"
    " SUBSYSTEM=memory\n"
    "6,1202,3308761700,-;memory: usage 102400kB, limit 102400kB, failcnt 55\n"
    "6,1203,3308761800,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
    "oom_memcg=/hs-test-1,task_memcg=/hs-test-1,task=python3,pid=4725,uid=0\n"
    "3,1204,3308761900,-;Memory cgroup out of memory: Killed process 4725 (python3) total-vm:231540kB, "
    "anon-rss:98304kB, file-rss:4096kB, shmem-rss:0kB, UID:0 pgtables:500kB oom_score_adj:0\n"
    "6,1205,3400000000,-;python3[13286]: segfault at 0 ip 00007f1c2a3b4c5d sp 00007ffd1e2f3a40 error 4 in "
    "libc.so.6[7f1c2a300000+195000] likely on CPU 1 (core 1, socket 0)\n"
    "4,1206,3500000000,-;Out of memory: Killed process 999 (trainer) total-vm:1kB, anon-rss:2048kB, file-rss:0kB, shmem-rss:0kB\n"
    "garbage without semicolon\n"
    "6,x,notanumber,-;Killed process 1 (init)\n";

TEST(Deaths, KmsgRecordsSkipContinuationsAndGarbage) {
  auto recs = parse_kmsg(kLog);
  ASSERT_EQ(recs.size(), 6u);
  EXPECT_DOUBLE_EQ(recs[0].boot_s, 3308.76162);
  EXPECT_EQ(recs[1].text, "memory: usage 102400kB, limit 102400kB, failcnt 55");
}

TEST(Deaths, OomKillInAMemoryCgroup) {
  auto deaths = kernel_deaths(parse_kmsg(kLog));
  ASSERT_EQ(deaths.size(), 3u);
  const KernelDeath& k = deaths[0];
  EXPECT_EQ(k.pid, 4725);
  EXPECT_EQ(k.comm, "python3");
  EXPECT_EQ(k.death.how, "oom-kill");
  EXPECT_EQ(k.death.signal, SIGKILL);
  EXPECT_EQ(k.death.cgroup, "/hs-test-1");
  EXPECT_EQ(k.death.limit_bytes, 102400ull << 10);
  EXPECT_EQ(k.death.rss_bytes, (98304ull + 4096) << 10);
}

TEST(Deaths, SegfaultAndGlobalOom) {
  auto deaths = kernel_deaths(parse_kmsg(kLog));
  ASSERT_EQ(deaths.size(), 3u);
  EXPECT_EQ(deaths[1].pid, 13286);
  EXPECT_EQ(deaths[1].death.how, "segfault");
  EXPECT_EQ(deaths[1].death.detail,
            "segfault at 0 ip 00007f1c2a3b4c5d sp 00007ffd1e2f3a40 error 4 in libc.so.6[7f1c2a300000+195000]");
  EXPECT_EQ(deaths[2].pid, 999);
  EXPECT_EQ(deaths[2].death.cgroup, "");          // a global OOM kill: no memory cgroup
  EXPECT_FALSE(deaths[2].death.limit_bytes);
}

TEST(Deaths, WaitStatus) {
  Death killed = death_from_wait_status(SIGKILL);
  EXPECT_EQ(killed.how, "killed");
  EXPECT_EQ(killed.signal_name, "SIGKILL");
  EXPECT_FALSE(killed.core_dumped);
  Death dumped = death_from_wait_status(SIGSEGV | 0x80);
  EXPECT_TRUE(dumped.core_dumped);
  EXPECT_EQ(dumped.signal, SIGSEGV);
  Death exited = death_from_wait_status(3 << 8);
  EXPECT_EQ(exited.how, "exited");
  EXPECT_EQ(exited.exit_code, 3);
}

TEST(Deaths, StatExitCodeIsField52) {
  std::string stat = "4725 (py thon) Z 4700";
  for (int f = 5; f <= 51; ++f) stat += " 0";
  EXPECT_EQ(parse_stat_exit_code(stat + " 9\n"), 9);
  EXPECT_FALSE(parse_stat_exit_code(stat + "\n"));   // an old kernel without the field
  EXPECT_FALSE(parse_stat_exit_code("garbage"));
}

TEST(Deaths, CoreDestination) {
  EXPECT_EQ(core_destination("core\n", 42, "python3"), "core");
  EXPECT_EQ(core_destination("/var/cores/core-%e.%p", 42, "python3"), "/var/cores/core-python3.42");
  EXPECT_EQ(core_destination("|/lib/systemd/systemd-coredump %P %u %g %s %t 9223372036854775808 %h", 42, "x"),
            "systemd-coredump (coredumpctl info 42)");
  EXPECT_EQ(core_destination("/c/%t.core", 42, "x"), "'/c/%t.core' (kernel.core_pattern)");
}

}  // namespace
}  // namespace hangscan
