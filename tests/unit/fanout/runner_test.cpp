// run_command(): exit codes, bounded capture, lines as they come, deadlines that kill the
// whole process group, and helpers that keep the pipes open. Real child processes.
#include <signal.h>
#include <stdlib.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "fanout/runner.h"

namespace hangscan {
namespace {

using namespace std::chrono_literals;

CommandResult run(std::vector<std::string> argv, Deadline deadline = Deadline::after(10s),
                  const LineHandler& lines = {}, CommandSpec spec = {}) {
  spec.argv = std::move(argv);
  auto r = run_command(spec, deadline, lines);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().what());
  return r.ok() ? *r : CommandResult{};
}

bool pid_alive(int pid) { return ::kill(pid, 0) == 0; }

TEST(Runner, CapturesBothStreamsAndTheExitCode) {
  auto r = run({"/bin/sh", "-c", "echo out1; echo err1 >&2; echo out2; exit 3"});
  EXPECT_EQ(r.out, "out1\nout2\n");
  EXPECT_EQ(r.err, "err1\n");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.succeeded());
  EXPECT_TRUE(run({"true"}).succeeded());
}

TEST(Runner, ArgumentsAreNeverInterpretedByAShell) {
  auto r = run({"/bin/echo", "a;b", "$(id)", "'q'", "x y"});
  EXPECT_EQ(r.out, "a;b $(id) 'q' x y\n");
}

TEST(Runner, StdoutIsBoundedButLinesStillFlow) {
  CommandSpec spec;
  spec.max_stdout = 1000;
  int lines = 0;
  auto r = run(
      {"/bin/sh", "-c", "i=0; while [ $i -lt 500 ]; do echo 0123456789; i=$((i+1)); done"},
      Deadline::after(10s),
      [&](std::string_view line) {
        EXPECT_EQ(line, "0123456789");
        ++lines;
      },
      spec);
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_EQ(lines, 500);
  EXPECT_EQ(r.exit_code, 0);
}

TEST(Runner, LastLineWithoutNewlineIsDelivered) {
  std::vector<std::string> got;
  run({"/usr/bin/printf", "x\\ny\\nz"}, Deadline::after(10s),
      [&](std::string_view l) { got.emplace_back(l); });
  EXPECT_EQ(got, (std::vector<std::string>{"x", "y", "z"}));
}

TEST(Runner, DeadlineKillsTheWholeGroup) {
  // The shell prints its background child's pid, then waits forever.
  auto started = std::chrono::steady_clock::now();
  auto r = run({"/bin/sh", "-c", "sleep 60 & echo $!; wait"}, Deadline::after(500ms));
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.term_signal, SIGTERM);
  EXPECT_LT(took, 5s);
  ASSERT_FALSE(r.out.empty());
  int grandchild = std::stoi(r.out);
  // SIGTERM went to the group, so the sleep died with the shell (reaped by init soon).
  for (int i = 0; i < 100 && pid_alive(grandchild); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(pid_alive(grandchild));
}

TEST(Runner, ChildIgnoringTermIsKilledAfterTheGrace) {
  CommandSpec spec;
  spec.kill_grace = 300ms;
  auto started = std::chrono::steady_clock::now();
  auto r = run({"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"},
               Deadline::after(300ms), {}, spec);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_EQ(r.out, "ready\n");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 4s);
}

TEST(Runner, HelperHoldingThePipeDoesNotHoldUsUp) {
  CommandSpec spec;
  spec.drain_after_exit = 200ms;
  auto started = std::chrono::steady_clock::now();
  auto r = run({"/bin/sh", "-c", "sleep 60 & echo $!; exit 0"}, Deadline::after(20s), {}, spec);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  int helper = std::stoi(r.out);
  for (int i = 0; i < 100 && pid_alive(helper); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(pid_alive(helper));
}

TEST(Runner, EnvironmentIsFilteredAndSet) {
  ::setenv("HS_RUNNER_DROP", "1", 1);
  ::setenv("HS_RUNNER_KEEP", "2", 1);
  CommandSpec spec;
  spec.unset_prefixes = {"HS_RUNNER_"};
  spec.keep = {"HS_RUNNER_KEEP"};
  spec.set = {{"HS_RUNNER_NEW", "3"}};
  auto r = run({"/bin/sh", "-c", "echo \"${HS_RUNNER_DROP-unset} $HS_RUNNER_KEEP $HS_RUNNER_NEW\""},
               Deadline::after(10s), {}, spec);
  EXPECT_EQ(r.out, "unset 2 3\n");
  ::unsetenv("HS_RUNNER_DROP");
  ::unsetenv("HS_RUNNER_KEEP");
}

TEST(Runner, MissingProgramIsNotFound) {
  CommandSpec spec;
  spec.argv = {"hangscan-no-such-program-xyz"};
  auto r = run_command(spec, Deadline::after(1s));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::not_found);
  EXPECT_EQ(r.error().what(), "'hangscan-no-such-program-xyz' not found in PATH");
}

TEST(Runner, ShellQuoting) {
  EXPECT_EQ(shell_quote("abc"), "'abc'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(describe_argv({"srun", "--jobid=12", "a b", "x'y"}), "srun --jobid=12 'a b' 'x'\\''y'");
  // What the shell makes of a quoted word is exactly the word.
  std::string hostile = "a'b\"c$(id)`id`;|&\\ \n*";
  auto r = run({"/bin/sh", "-c", "printf %s " + shell_quote(hostile)});
  EXPECT_EQ(r.out, hostile);
}

}  // namespace
}  // namespace hangscan
