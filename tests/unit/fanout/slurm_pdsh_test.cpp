// What hangscan reads from Slurm and pdsh, and the argv it hands them: exact values, taken
// from Slurm 22.05 and pdsh 2.34 output on the test cluster.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fanout/agent.h"
#include "fanout/pdsh.h"
#include "fanout/slurm.h"

namespace hangscan {
namespace {

using Args = std::vector<std::string>;

TEST(Slurm, SqueueLine) {
  auto job = parse_squeue_line("4242|RUNNING|n[1-3]\n", "4242");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->id, "4242");
  EXPECT_EQ(job->state, "RUNNING");
  EXPECT_EQ(job->nodelist, "n[1-3]");
  auto array = parse_squeue_line("7_1|RUNNING|n1\n7_2|PENDING|\n", "7_2");
  ASSERT_TRUE(array.ok());
  EXPECT_EQ(array->state, "PENDING");
  EXPECT_EQ(array->nodelist, "");
  auto none = parse_squeue_line("", "5");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, Errc::not_found);
  EXPECT_EQ(none.error().what(), "Slurm job 5 not found");
  EXPECT_EQ(parse_squeue_line("garbage\n", "5").error().code, Errc::bad_data);
}

TEST(Slurm, NumTasksFromScontrol) {
  const char* show =
      "JobId=1 JobName=hsjob.sh\n"
      "   NodeList=n[1-3]\n"
      "   NumNodes=3 NumCPUs=6 NumTasks=6 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n";
  EXPECT_EQ(parse_num_tasks(show), 6);
  EXPECT_EQ(parse_num_tasks("   NumNodes=3 NumCPUs=6 NumTasks=N/A CPUs/Task=1\n"), std::nullopt);
  EXPECT_EQ(parse_num_tasks("ReqNumTasks=4\n"), std::nullopt);
  EXPECT_EQ(parse_num_tasks(""), std::nullopt);
}

TEST(Slurm, Hostnames) {
  auto nodes = parse_hostnames("n1\nn2\nn3\n");
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(*nodes, (Args{"n1", "n2", "n3"}));
  EXPECT_FALSE(parse_hostnames("n1\n$(reboot)\n").ok());
  EXPECT_FALSE(parse_hostnames("\n").ok());
}

TEST(Slurm, SrunErrors) {
  const char* err =
      "srun: error: Task launch for StepId=1.3 failed on node n3: Communication connection "
      "failure\n"
      "srun: error: Application launch failed: Communication connection failure\n"
      "srun: Job step aborted: Waiting up to 4 seconds for job step to finish.\n"
      "0: slurmstepd-n1: error: *** STEP 1.3 ON n1 CANCELLED AT 2026-11-22T08:06:41 ***\n"
      "srun: error: n2: task 1: Killed\n"
      "srun: error: n1: tasks 0-1: Exited with exit code 2\n"
      "srun: error: bad;node: task 1: Killed\n";
  auto e = parse_srun_errors(err);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].node, "n3");
  EXPECT_TRUE(e[0].launch_failed);
  EXPECT_EQ(e[0].reason, "srun could not start the agent there: Communication connection failure");
  EXPECT_EQ(e[1].node, "n2");
  EXPECT_FALSE(e[1].launch_failed);
  EXPECT_EQ(e[1].reason, "agent killed");
  EXPECT_EQ(e[2].node, "n1");
  EXPECT_EQ(e[2].reason, "agent exited with exit code 2");
  auto general = srun_general_errors(
      "srun: error: Unable to create step for job 9: Requested nodes are busy\nsrun: error: n2: "
      "task 0: Killed\n");
  EXPECT_EQ(general,
            (Args{"srun: error: Unable to create step for job 9: Requested nodes are busy"}));
}

TEST(Slurm, SrunArgv) {
  SlurmOptions o;
  o.job_id = "4242";
  o.agent_path = "/opt/hangscan/bin/hangscan";
  o.agent_args = {"--unwinder", "libdw", "--native"};
  auto argv = build_srun_argv(o, {"n1", "n2", "n3", "gpu7"}, std::chrono::milliseconds(25000));
  EXPECT_EQ(argv, (Args{"srun",
                        "--jobid=4242",
                        "--overlap",
                        "--gres=gpu:0",
                        "--mpi=none",
                        "-N",
                        "4",
                        "-n",
                        "4",
                        "--ntasks-per-node=1",
                        "-w",
                        "n[1-3],gpu7",
                        "--label",
                        "--quiet",
                        "--input=none",
                        "/opt/hangscan/bin/hangscan",
                        "agent",
                        "--slurm-job",
                        "4242",
                        "--timeout-ms",
                        "25000",
                        "--unwinder",
                        "libdw",
                        "--native"}));
  // Started inside a step of the same job: that step is left out of the capture.
  o.context = SlurmContext{"4242", "7"};
  argv = build_srun_argv(o, {"n1"}, std::chrono::milliseconds(1000));
  auto it = std::find(argv.begin(), argv.end(), "--exclude-step");
  ASSERT_NE(it, argv.end());
  EXPECT_EQ(*(it + 1), "7");
  // Inside another job's step: nothing to exclude.
  o.context = SlurmContext{"99", "0"};
  argv = build_srun_argv(o, {"n1"}, std::chrono::milliseconds(1000));
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--exclude-step"), argv.end());
}

TEST(Slurm, EnvironmentCleaning) {
  CommandSpec spec;
  clean_slurm_environment(spec);
  EXPECT_EQ(spec.unset_prefixes, (Args{"SLURM_", "SLURMD_"}));
  EXPECT_EQ(spec.keep, (Args{"SLURM_CONF"}));
}

TEST(SlurmAgent, ClassifiesTasksByJobNodeAndStep) {
  const std::vector<std::string> excl{"5"};
  Args task{"PATH=/bin", "SLURM_JOB_ID=12", "SLURMD_NODENAME=n2", "SLURM_STEP_ID=0",
            "SLURM_PROCID=3"};
  EXPECT_EQ(classify_slurm_environment(task, "12", "n2", excl), SlurmTaskMatch::task);
  EXPECT_EQ(classify_slurm_environment(task, "12", "n1", excl),
            SlurmTaskMatch::other);  // same host, other node
  EXPECT_EQ(classify_slurm_environment(task, "13", "n2", excl), SlurmTaskMatch::other);
  Args batch{"SLURM_JOB_ID=12", "SLURMD_NODENAME=n2", "SLURM_PROCID=0"};
  EXPECT_EQ(classify_slurm_environment(batch, "12", "n2", excl), SlurmTaskMatch::batch);
  Args own{"SLURM_JOBID=12", "SLURMD_NODENAME=n2", "SLURM_STEPID=5"};
  EXPECT_EQ(classify_slurm_environment(own, "12", "n2", excl), SlurmTaskMatch::excluded);
  Args array{"SLURM_JOB_ID=130", "SLURM_ARRAY_JOB_ID=128", "SLURM_ARRAY_TASK_ID=2",
             "SLURMD_NODENAME=n1", "SLURM_STEP_ID=0"};
  EXPECT_EQ(classify_slurm_environment(array, "128_2", "n1", {}), SlurmTaskMatch::task);
  EXPECT_EQ(classify_slurm_environment(array, "130", "n1", {}), SlurmTaskMatch::task);
  EXPECT_EQ(classify_slurm_environment({}, "12", "n2", {}), SlurmTaskMatch::other);
}

TEST(Pdsh, ExecArgvHasNoShell) {
  PdshOptions o;
  o.hosts = {"n1", "n2", "n3"};
  o.match = "ring_allreduce.py --rank";
  o.rcmd = "exec";
  o.fanout = 8;
  o.agent_path = "/usr/bin/hangscan";
  o.timeout = std::chrono::milliseconds(20000);
  auto argv = build_pdsh_argv(o, std::chrono::milliseconds(15000));
  EXPECT_EQ(argv, (Args{"pdsh", "-R", "exec", "-f", "8", "-t", "10", "-u", "20", "-w", "n[1-3]",
                        "/usr/bin/hangscan", "agent", "--match", "ring_allreduce.py --rank",
                        "--timeout-ms", "15000", "--node", "%h"}));
}

TEST(Pdsh, RemoteShellLineQuotesEveryWord) {
  PdshOptions o;
  o.hosts = {"n1"};
  o.match = "it's $(reboot); `x` | y";
  o.rcmd = "ssh";
  o.agent_path = "/opt/hs dir/hangscan";
  o.remote_setup = "/etc/profile.d/site's env.sh";
  auto argv = build_pdsh_argv(o, std::chrono::milliseconds(1000));
  ASSERT_EQ(argv.size(), 12u);
  EXPECT_EQ(argv.back(),
            ". '/etc/profile.d/site'\\''s env.sh' && exec '/opt/hs dir/hangscan' 'agent' '--match' "
            "'it'\\''s $(reboot); `x` | y' '--timeout-ms' '1000'");
}

TEST(Pdsh, ExecWithRemoteSetupGoesThroughSh) {
  PdshOptions o;
  o.hosts = {"n1"};
  o.match = "x";
  o.rcmd = "exec";
  o.agent_path = "/bin/hangscan";
  o.remote_setup = "/tmp/setup.sh";
  auto argv = build_pdsh_argv(o, std::chrono::milliseconds(1000));
  Args tail(argv.end() - 3, argv.end());
  EXPECT_EQ(
      tail,
      (Args{"/bin/sh", "-c",
            ". '/tmp/setup.sh' && exec '/bin/hangscan' 'agent' '--match' 'x' '--timeout-ms' '1000' "
            "'--node' '%h'"}));
}

TEST(Pdsh, HostErrors) {
  auto e = parse_pdsh_errors(
      "n2: ssh: connect to host n2 port 22: Connection refused\n"
      "pdsh@login: n2: ssh exited with exit code 255\n"
      "pdsh@login: n;3: x\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].host, "n2");
  EXPECT_EQ(e[0].reason, "pdsh: ssh exited with exit code 255");
}

}  // namespace
}  // namespace hangscan
