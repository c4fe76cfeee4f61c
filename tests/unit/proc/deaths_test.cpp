// The kernel log's OOM-kill and crash records, wait statuses and core patterns, on lines as
// this machine's kernel writes them.
#include "proc/deaths.h"

#include <csignal>

#include <gtest/gtest.h>

namespace hangscan {
namespace {

constexpr const char* kLog =
    "6,1201,3308761620,-;python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, "
    "oom_score_adj=0\n"
    " SUBSYSTEM=memory\n"
    "6,1202,3308761700,-;memory: usage 102400kB, limit 102400kB, failcnt 55\n"
    "6,1203,3308761800,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/"
    ",mems_allowed=0,"
    "oom_memcg=/hs-test-1,task_memcg=/hs-test-1,task=python3,pid=4725,uid=0\n"
    "3,1204,3308761900,-;Memory cgroup out of memory: Killed process 4725 (python3) "
    "total-vm:231540kB, "
    "anon-rss:98304kB, file-rss:4096kB, shmem-rss:0kB, UID:0 pgtables:500kB oom_score_adj:0\n"
    "6,1205,3400000000,-;python3[13286]: segfault at 0 ip 00007f1c2a3b4c5d sp 00007ffd1e2f3a40 "
    "error 4 in "
    "libc.so.6[7f1c2a300000+195000] likely on CPU 1 (core 1, socket 0)\n"
    "4,1206,3500000000,-;Out of memory: Killed process 999 (trainer) total-vm:1kB, "
    "anon-rss:2048kB, file-rss:0kB, shmem-rss:0kB\n"
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
            "segfault at 0 ip 00007f1c2a3b4c5d sp 00007ffd1e2f3a40 error 4 in "
            "libc.so.6[7f1c2a300000+195000]");
  EXPECT_EQ(deaths[2].pid, 999);
  EXPECT_EQ(deaths[2].death.cgroup, "");  // a global OOM kill: no memory cgroup
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
  EXPECT_FALSE(parse_stat_exit_code(stat + "\n"));  // an old kernel without the field
  EXPECT_FALSE(parse_stat_exit_code("garbage"));
}

TEST(Deaths, CoreDestination) {
  EXPECT_EQ(core_destination("core\n", 42, "python3"), "core");
  EXPECT_EQ(core_destination("/var/cores/core-%e.%p", 42, "python3"), "/var/cores/core-python3.42");
  EXPECT_EQ(core_destination("|/lib/systemd/systemd-coredump %P %u %g %s %t 9223372036854775808 %h",
                             42, "x"),
            "systemd-coredump (coredumpctl info 42)");
  EXPECT_EQ(core_destination("/c/%t.core", 42, "x"), "'/c/%t.core' (kernel.core_pattern)");
}

// Linking a kernel-log death to the job: by the job's process tree or memory cgroup, never by
// the command name (records as this machine's kernel writes them; the Slurm one as a v2 node
// with task cgroups under the step's limit writes it).
constexpr const char* kStrangerLog =
    "3,2001,4000000000,-;python3[5001]: segfault at 0 ip 00007f1c2a3b4c5d sp 00007ffd1e2f3a40 "
    "error 4 in "
    "libc.so.6[7f1c2a300000+195000] likely on CPU 0 (core 0, socket 0)\n"
    "6,2002,4100000000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/"
    ",mems_allowed=0,"
    "oom_memcg=/slurm/uid_1000/job_42/step_0,task_memcg=/slurm/uid_1000/job_42/step_0/"
    "task_2,task=python3,pid=5002,uid=1000\n"
    "3,2003,4100000100,-;Memory cgroup out of memory: Killed process 5002 (python3) "
    "total-vm:231540kB, "
    "anon-rss:98304kB, file-rss:4096kB, shmem-rss:0kB, UID:1000 pgtables:500kB oom_score_adj:0\n"
    "6,2004,4200000000,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/"
    ",mems_allowed=0,global_oom,"
    "task_memcg=/process_api/96666f5a,task=python3,pid=5003,uid=0\n"
    "3,2005,4200000100,-;Out of memory: Killed process 5003 (python3) total-vm:1kB, "
    "anon-rss:2048kB, file-rss:0kB, shmem-rss:0kB\n";

TEST(DeathLinks, OnlyTheTreeOrTheMemoryCgroupLinks) {
  auto deaths = kernel_deaths(parse_kmsg(kStrangerLog));
  ASSERT_EQ(deaths.size(), 3u);
  EXPECT_EQ(deaths[1].oom_memcg, "/slurm/uid_1000/job_42/step_0");
  EXPECT_EQ(deaths[2].oom_memcg, "");  // a global OOM kill names no limiting cgroup
  JobEvidence e;
  e.ticks_per_s = 100;
  e.memory_cgroups = {"/process_api/96666f5a"};
  // Same command, same node, same window, nothing else: not the job's.
  for (const KernelDeath& k : deaths) EXPECT_EQ(link_kernel_death(k, e), DeathLink::none) << k.pid;
  // A zombie of the tree that started before the segfault (4000 s at 100 ticks/s) is its pid.
  e.dead = {{5001, 390000}};
  EXPECT_EQ(link_kernel_death(deaths[0], e), DeathLink::tree_pid);
  // A zombie that started after it has a reused pid: the segfault was an earlier process's.
  e.dead = {{5001, 410000}};
  EXPECT_EQ(link_kernel_death(deaths[0], e), DeathLink::none);
  // The step's limit is a parent of a member's task cgroup: the job's; a sibling job's is not.
  e.memory_cgroups = {"/slurm/uid_1000/job_42/step_0/task_0"};
  EXPECT_EQ(link_kernel_death(deaths[1], e), DeathLink::memory_cgroup);
  e.memory_cgroups = {"/slurm/uid_1000/job_42/step_00/task_0", "/slurm/uid_1000/job_42"};
  EXPECT_EQ(link_kernel_death(deaths[1], e), DeathLink::none);
  e.memory_cgroups = {"/slurm/uid_1000/job_42/step_0"};
  EXPECT_EQ(link_kernel_death(deaths[1], e), DeathLink::memory_cgroup);
  // A global OOM kill of a process in a member's cgroup: only its pid could link it.
  e.memory_cgroups = {"/process_api/96666f5a"};
  EXPECT_EQ(link_kernel_death(deaths[2], e), DeathLink::none);
}

TEST(DeathLinks, MemoryCgroupOfProcCgroup) {
  EXPECT_EQ(memory_cgroup_of("9:name=systemd:/\n4:memory:/process_api/9666\n1:cpu:/\n0::/\n"),
            "/process_api/9666");
  EXPECT_EQ(memory_cgroup_of("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_1\n"),
            "/system.slice/slurmstepd.scope/job_42/step_0/user/task_1");
  EXPECT_EQ(memory_cgroup_of("garbage"), "");
}

TEST(DeathLinks, UnlinkedNoteNamesEachDeath) {
  auto deaths = kernel_deaths(parse_kmsg(kStrangerLog));
  EXPECT_EQ(unlinked_deaths_note({deaths[0]}),
            "1 other process died on this node during the job's window (not linked to the job): "
            "pid 5001 (python3) by SIGSEGV");
  EXPECT_EQ(unlinked_deaths_note(deaths),
            "3 other processes died on this node during the job's window (not linked to the job): "
            "pid 5001 (python3) by SIGSEGV, pid 5002 (python3) by the OOM killer, pid 5003 "
            "(python3) by the OOM killer");
  std::vector<KernelDeath> many(7, deaths[0]);
  EXPECT_EQ(unlinked_deaths_note(many).substr(unlinked_deaths_note(many).size() - 11),
            " and 2 more");
}

// As this machine's kernel logged an OOM kill in the test cluster's task/cgroup hierarchy.
constexpr const char* kSlurmLog =
    "6,3001,23254686841,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
    "mems_allowed=0,oom_memcg=/slurm_n2/uid_0/job_1/step_1,task_memcg=/slurm_n2/uid_0/job_1/"
    "step_1/task_0,task=python3,pid=32059,uid=0\n"
    "3,3002,23254686857,-;Memory cgroup out of memory: Killed process 32059 (python3) "
    "total-vm:423480kB, anon-rss:101632kB, file-rss:5284kB, shmem-rss:0kB, UID:0 pgtables:264kB "
    "oom_score_adj:0\n";

TEST(DeathLinks, TheSlurmJobsOwnCgroupLinksWithoutAnyMember) {
  auto deaths = kernel_deaths(parse_kmsg(kSlurmLog));
  ASSERT_EQ(deaths.size(), 1u);
  JobEvidence e;  // no member, no dead process on this node
  EXPECT_EQ(link_kernel_death(deaths[0], e), DeathLink::none);
  e.slurm_job_id = "1";
  EXPECT_EQ(link_kernel_death(deaths[0], e), DeathLink::slurm_cgroup);
  e.slurm_job_id = "11";  // another job: job_1 is not job_11
  EXPECT_EQ(link_kernel_death(deaths[0], e), DeathLink::none);
}

TEST(DeathLinks, SlurmJobCgroupNames) {
  EXPECT_TRUE(in_slurm_job_cgroup("/slurm/uid_1000/job_42/step_0", "42"));
  EXPECT_TRUE(in_slurm_job_cgroup("/slurm/uid_1000/job_42", "42"));
  EXPECT_TRUE(
      in_slurm_job_cgroup("/system.slice/slurmstepd.scope/job_42/step_0/user/task_1", "42"));
  EXPECT_FALSE(in_slurm_job_cgroup("/slurm/uid_1000/job_421/step_0", "42"));
  EXPECT_FALSE(in_slurm_job_cgroup("/kubepods/job_42/step_0", "42"));  // not Slurm's
  EXPECT_FALSE(in_slurm_job_cgroup("/slurm/uid_1000/job_42", ""));
  // Several slurmd on one host (the test cluster): each node's own hierarchy only.
  EXPECT_TRUE(in_slurm_job_cgroup("/slurm_n2/uid_0/job_1/step_1", "1", "n2"));
  EXPECT_FALSE(in_slurm_job_cgroup("/slurm_n2/uid_0/job_1/step_1", "1", "n1"));
  EXPECT_TRUE(in_slurm_job_cgroup("/slurm/uid_0/job_1/step_1", "1", "n1"));
}

}  // namespace
}  // namespace hangscan
