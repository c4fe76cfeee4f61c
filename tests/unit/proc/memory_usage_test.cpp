// Parsers behind a process's memory line: /proc/PID/status, /proc/PID/cgroup, mountinfo, limits.
#include "proc/memory_usage.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

TEST(MemoryUsage, StatusRssAndPeakInBytes) {
  StatusMemory m = parse_status_memory(
      "Name:\tpython3\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t4\n");
  ASSERT_TRUE(m.rss_bytes && m.peak_rss_bytes);
  EXPECT_EQ(*m.rss_bytes, 102400ull * 1024);
  EXPECT_EQ(*m.peak_rss_bytes, 204800ull * 1024);
}

TEST(MemoryUsage, StatusWithoutMemoryLinesOrWithGarbage) {
  EXPECT_FALSE(parse_status_memory("Name:\tkthreadd\nState:\tS\n").rss_bytes);
  EXPECT_FALSE(parse_status_memory("VmRSS:\t 99999999999999999999999 kB\n").rss_bytes);
  EXPECT_FALSE(parse_status_memory("VmRSS:\t -5 kB\n").rss_bytes);
  EXPECT_FALSE(
      parse_status_memory("VmRSS:\t 18014398509481984 kB\n").rss_bytes);  // overflows bytes
}

TEST(MemoryUsage, ProcCgroupV1AndV2Lines) {
  auto e = parse_proc_cgroup(
      "12:memory:/slurm/uid_0/job_42/step_0\n11:cpu,cpuacct:/x\n0::/user.slice\nbad "
      "line\n3:pids:relative\n");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ(e[0].path, "/slurm/uid_0/job_42/step_0");
  EXPECT_EQ(e[1].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_TRUE(e[2].controllers.empty());
  EXPECT_EQ(e[2].path, "/user.slice");
}

TEST(MemoryUsage, MountsOfBothHierarchies) {
  const char* mi =
      "25 1 0:22 / /sys rw shared:7 - sysfs sysfs rw\n"
      "30 25 0:26 / /sys/fs/cgroup ro shared:9 - tmpfs tmpfs ro,mode=755\n"
      "31 30 0:27 / /sys/fs/cgroup/unified rw shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
      "35 30 0:31 / /sys/fs/cgroup/cpu,cpuacct rw shared:14 - cgroup cgroup rw,cpu,cpuacct\n"
      "36 30 0:32 / /sys/fs/cgroup/memory rw shared:15 - cgroup cgroup rw,memory\n"
      "37 30 0:33 /sub /mnt/bound rw - cgroup cgroup rw,memory\n";
  CgroupMounts m = parse_cgroup_mounts(mi);
  EXPECT_EQ(m.v2, "/sys/fs/cgroup/unified");
  EXPECT_EQ(m.v1_memory, "/sys/fs/cgroup/memory");
  EXPECT_EQ(parse_cgroup_mounts("garbage\n\n - \n").v2, "");
}

TEST(MemoryUsage, LimitsMaxAndV1Unlimited) {
  EXPECT_FALSE(parse_memory_limit("max\n"));
  EXPECT_FALSE(parse_memory_limit("9223372036854771712\n"));
  EXPECT_EQ(parse_memory_limit("209715200\n"), 209715200ull);
  EXPECT_FALSE(parse_memory_limit("lots"));
}

TEST(MemoryUsage, ThisProcessHasAnRss) {
  auto m = read_memory_usage(getpid());
  ASSERT_TRUE(m && m->rss_bytes);
  EXPECT_GT(*m->rss_bytes, 0u);
}

TEST(MemoryUsage, OomKillCountOfV1AndV2) {
  // v1 memory.oom_control as this machine writes it; v2 memory.events as the kernel documents
  // it (Documentation/admin-guide/cgroup-v2.rst; this machine has no v2 memory controller).
  EXPECT_EQ(parse_oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 2u);
  EXPECT_EQ(parse_oom_kill_count("low 0\nhigh 0\nmax 14\noom 1\noom_kill 1\noom_group_kill 0\n"),
            1u);
  EXPECT_EQ(parse_oom_kill_count("oom_kill_disable 0\n"), std::nullopt);
}

}  // namespace
}  // namespace hangscan
