// The /proc parsers on fixture files (tests/unit/fixtures/proc_files/), including the
// awkward cases: spaces and parentheses in comm, "(deleted)" paths with spaces, kernel
// modules in stack lines, garbage lines.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "proc/proc_files.h"

namespace hangscan {
namespace {

std::string fixture(const std::string& name) {
  auto text = read_text_file(std::string(HS_FIXTURES) + "/proc_files/" + name);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? *text : std::string();
}

TEST(ProcFiles, ParseMaps) {
  auto maps = parse_maps(fixture("maps"));
  ASSERT_EQ(maps.size(), 10u);  // the garbage line is skipped
  EXPECT_EQ(maps[0].start, 0x400000u);
  EXPECT_EQ(maps[0].end, 0x421000u);
  EXPECT_EQ(maps[0].perms, "r--p");
  EXPECT_EQ(maps[0].path, "/usr/bin/python3.11");
  EXPECT_EQ(maps[1].offset, 0x21000u);
  EXPECT_TRUE(maps[1].executable());
  EXPECT_EQ(maps[2].path, "[heap]");
  EXPECT_FALSE(maps[2].is_file());
  EXPECT_EQ(maps[3].path, "");
  EXPECT_TRUE(maps[3].writable());
  EXPECT_EQ(maps[6].path, "/tmp/my lib (v2).so");
  EXPECT_TRUE(maps[6].deleted);
  EXPECT_EQ(maps[7].path, "[stack]");
  EXPECT_EQ(maps[9].start, 0xffffffffff600000u);
  EXPECT_TRUE(maps[4].contains(0x7f1c2c600000u));
  EXPECT_FALSE(maps[4].contains(0x7f1c2c628000u));
}

TEST(ProcFiles, ParseStatWithOddComm) {
  auto st = parse_stat(fixture("stat"));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->comm, "my (odd) name");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 4200);
  EXPECT_EQ(st->utime, 57u);
  EXPECT_EQ(st->stime, 13u);
  EXPECT_EQ(st->num_threads, 3);
  EXPECT_EQ(st->start_time, 987654u);
  EXPECT_FALSE(st->is_kernel_thread());
}

TEST(ProcFiles, ParseStatKernelThread) {
  auto st = parse_stat(fixture("stat_kthread"));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->comm, "kthreadd");
  EXPECT_TRUE(st->is_kernel_thread());
}

TEST(ProcFiles, ParseStatRejectsGarbage) {
  EXPECT_FALSE(parse_stat("").has_value());
  EXPECT_FALSE(parse_stat("12 (x").has_value());
  EXPECT_FALSE(parse_stat("12 (x) S").has_value());
}

TEST(ProcFiles, ParseStatus) {
  auto st = parse_status(fixture("status"));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->name, "python3");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->tgid, 4242);
  EXPECT_EQ(st->ppid, 4200);
  EXPECT_EQ(st->tracer_pid, 777);
  EXPECT_EQ(st->uid, 1000);
  EXPECT_EQ(st->euid, 1001);
}

TEST(ProcFiles, ParseSyscall) {
  EXPECT_EQ(parse_syscall(fixture("syscall_futex")), std::optional<std::string>("futex"));
  EXPECT_EQ(parse_syscall(fixture("syscall_running")), std::optional<std::string>("running"));
  EXPECT_EQ(parse_syscall(fixture("syscall_none")), std::optional<std::string>("none"));
  EXPECT_EQ(parse_syscall("9999 0x1 0x2"), std::optional<std::string>("syscall_9999"));
  EXPECT_FALSE(parse_syscall("").has_value());
  EXPECT_EQ(parse_syscall_sp(fixture("syscall_futex")),
            std::optional<std::uint64_t>(0x7ffd7a9d2c10u));
  EXPECT_EQ(parse_syscall_sp(fixture("syscall_none")),
            std::optional<std::uint64_t>(0x7ffd7a9d2c18u));
  EXPECT_FALSE(parse_syscall_sp(fixture("syscall_running")).has_value());
  EXPECT_EQ(syscall_name(7), "poll");
  EXPECT_EQ(syscall_name(230), "clock_nanosleep");
}

TEST(ProcFiles, ParseKernelStack) {
  auto frames = parse_kernel_stack(fixture("stack"));
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames[0].function, "futex_wait_queue");
  EXPECT_EQ(frames[0].kind, FrameKind::kernel);
  EXPECT_EQ(frames[0].offset, 0x60u);
  EXPECT_EQ(frames[0].module, "[kernel]");
  EXPECT_EQ(frames[2].function, "nvidia_poll");
  EXPECT_EQ(frames[2].module, "nvidia");
  EXPECT_EQ(frames[4].function, "entry_SYSCALL_64_after_hwframe");
}

TEST(ProcFiles, SplitNul) {
  std::string text("python3\0-u\0train.py\0", 20);
  auto parts = split_nul(text);
  ASSERT_EQ(parts.size(), 3u);  // the trailing NUL ends the last string, it adds none
  EXPECT_EQ(parts[0], "python3");
  EXPECT_EQ(parts[2], "train.py");
  EXPECT_EQ(split_nul(std::string("a\0\0b", 4)), (std::vector<std::string>{"a", "", "b"}));
}

TEST(ProcFiles, ListTasksOfSelfAndOfNobody) {
  auto self = list_tasks(getpid());
  ASSERT_TRUE(self.ok());
  EXPECT_FALSE(self->empty());
  auto gone = list_tasks(0x3fffffff);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, Errc::no_such_process);
}

TEST(ProcFiles, ListPidsListsNumbersOnly) {
  auto pids = list_pids();
  EXPECT_TRUE(std::binary_search(pids.begin(), pids.end(), static_cast<int>(getpid())));
  EXPECT_TRUE(std::is_sorted(pids.begin(), pids.end()));
  EXPECT_GT(pids.front(), 0);  // "self", "thread-self" and the other names are never a pid
  // A root of made-up entries: only the positive numbers that fit an int are pids.
  char dir[] = "/tmp/hs-list-pids-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::vector<std::string> names = {"42", "7", "self", "0", "-3", "12x", "99999999999"};
  for (const auto& name : names) ASSERT_EQ(mkdir((std::string(dir) + "/" + name).c_str(), 0700), 0);
  EXPECT_EQ(list_pids(dir), (std::vector<int>{7, 42}));
  for (const auto& name : names) ASSERT_EQ(rmdir((std::string(dir) + "/" + name).c_str()), 0);
  ASSERT_EQ(rmdir(dir), 0);
  EXPECT_EQ(list_pids(dir), std::vector<int>{});  // gone: nothing, no error
}

TEST(ProcFiles, ReadLinkNamesTheTargetOrNothing) {
  char dir[] = "/tmp/hs-read-link-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string link = std::string(dir) + "/link";
  ASSERT_EQ(symlink("/no/such dir/target (deleted)", link.c_str()), 0);
  EXPECT_EQ(read_link(link), std::optional<std::string>("/no/such dir/target (deleted)"));
  EXPECT_EQ(read_link(std::string(dir) + "/absent"), std::nullopt);
  EXPECT_EQ(read_link(dir), std::nullopt);  // a directory, not a link
  // The same relative to an open directory (the node-wide fd scan reads /proc/PID/fd that way).
  int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir_fd, 0);
  EXPECT_EQ(read_link_at(dir_fd, "link"),
            std::optional<std::string>("/no/such dir/target (deleted)"));
  EXPECT_EQ(read_link_at(dir_fd, "absent"), std::nullopt);
  ASSERT_EQ(close(dir_fd), 0);
  auto exe = read_link("/proc/self/exe");
  ASSERT_TRUE(exe.has_value());
  EXPECT_TRUE(exe->ends_with("/hs_proc_tests")) << *exe;
  ASSERT_EQ(unlink(link.c_str()), 0);
  ASSERT_EQ(rmdir(dir), 0);
}

TEST(ProcFiles, IoCharsAreReadPlusWrite) {
  EXPECT_EQ(parse_io_chars("rchar: 1200\nwchar: 34\nsyscr: 5\nsyscw: 2\nread_bytes: 0\n"),
            std::optional<std::uint64_t>{1234});
  EXPECT_EQ(parse_io_chars("rchar: 1200\n"), std::nullopt);  // no wchar: not a /proc/PID/io
  EXPECT_EQ(parse_io_chars("rchar: x\nwchar: 1\n"), std::nullopt);
  // This process's own: writing to a pipe moves wchar by the bytes written.
  auto before = read_io_chars(getpid());
  ASSERT_TRUE(before.has_value());
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  ASSERT_EQ(write(p[1], "abcde", 5), 5);
  close(p[0]);
  close(p[1]);
  auto after = read_io_chars(getpid());
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(*after - *before, 5u);
}

}  // namespace
}  // namespace hangscan
