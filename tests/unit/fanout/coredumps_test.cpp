// coredumpctl's JSON list, as systemd's coredumpctl writes it (`coredumpctl --json=short list`:
// the list table's columns time, pid, uid, gid, sig, corefile, exe, size; time in microseconds,
// sig a number in some versions and a name in others, size null when unknown). No systemd runs
// here (not pid 1, no journald, no coredumpctl): these are the documented shapes, not captures.
#include "fanout/coredumps.h"

#include <csignal>

#include <gtest/gtest.h>

namespace hangscan {
namespace {

constexpr const char* kList =
    R"([{"time":1764000000123456,"pid":4725,"uid":0,"gid":0,"sig":11,"corefile":"present",)"
    R"("exe":"/usr/bin/python3.11","size":13107200},)"
    R"({"time":1764000100000000,"pid":4726,"uid":0,"gid":0,"sig":"SEGV","corefile":"none",)"
    R"("exe":"/usr/bin/python3.11","size":null},)"
    R"({"time":1763000000000000,"pid":4725,"uid":0,"gid":0,"sig":"SIGABRT","corefile":"missing",)"
    R"("exe":"/usr/bin/python3.11","size":null},)"
    R"({"pid":"x"}, 7])";

TEST(Coredumps, ParsesTheList) {
  auto e = parse_coredumpctl_list(kList);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].pid, 4725);
  EXPECT_DOUBLE_EQ(*e[0].time_s, 1764000000.123456);
  EXPECT_EQ(e[0].signal, SIGSEGV);
  EXPECT_EQ(e[0].corefile, "present");
  EXPECT_EQ(e[0].size, 13107200u);
  EXPECT_EQ(e[1].signal, SIGSEGV);  // a name in newer versions
  EXPECT_FALSE(e[1].size);
  EXPECT_EQ(e[2].signal, SIGABRT);
  EXPECT_TRUE(parse_coredumpctl_list("not json").empty());
  EXPECT_TRUE(parse_coredumpctl_list(R"({"pid":1})").empty());
}

TEST(Coredumps, TheNewestEntryOfThePidInTheWindow) {
  auto e = parse_coredumpctl_list(kList);
  auto c = coredump_of(e, 4725, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->corefile, "present");               // the newer of pid 4725's two entries
  EXPECT_FALSE(coredump_of(e, 4725, 1764000001));  // both before the process started
  EXPECT_FALSE(coredump_of(e, 1, 0));
}

TEST(Coredumps, Words) {
  auto e = parse_coredumpctl_list(kList);
  EXPECT_EQ(coredump_words(e[0]),
            "systemd-coredump (present, 12.5 MiB); write it out with: coredumpctl dump 4725 -o "
            "core.4725, then: hangscan core core.4725");
  EXPECT_EQ(coredump_words(e[1]),
            "systemd-coredump (none): no core was stored (coredump.conf Storage=none, or larger "
            "than its limits)");
  EXPECT_EQ(coredump_words(e[2]), "systemd-coredump (missing): the stored core was removed since");
}

TEST(Coredumps, Argv) {
  EXPECT_EQ(coredumpctl_argv(4725),
            (std::vector<std::string>{"coredumpctl", "--json=short", "--no-pager", "list",
                                      "COREDUMP_PID=4725"}));
}

}  // namespace
}  // namespace hangscan
