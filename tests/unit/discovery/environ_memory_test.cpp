// read_environment(): libc's environ array read from memory, on fabricated memory (bounds,
// bad pointers) and on live processes that changed their environment after they started
// (a C child calling setenv, Debian's python3.11 writing os.environ: its `environ` is a
// copy-relocated variable in the executable, not libc's own).
#include "discovery/environ_memory.h"

#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "child_process.h"
#include "proc/process_tree.h"
#include "target/live_target.h"

namespace hangscan {
namespace {

// Builds a char* array and its strings in fabricated memory at `base`.
BufferMemory fabricated(std::uint64_t base, const std::vector<std::string>& entries,
                        bool terminate) {
  BufferMemory mem;
  std::uint64_t strings = base + 0x10000;
  std::vector<std::uint8_t> array;
  std::vector<std::uint8_t> blob;
  for (const auto& e : entries) {
    std::uint64_t addr = strings + blob.size();
    array.insert(array.end(), reinterpret_cast<std::uint8_t*>(&addr),
                 reinterpret_cast<std::uint8_t*>(&addr) + 8);
    blob.insert(blob.end(), e.begin(), e.end());
    blob.push_back(0);
  }
  if (terminate) array.insert(array.end(), 8, 0);
  mem.add(base, std::move(array));
  mem.add(strings, std::move(blob));
  return mem;
}

TEST(EnvironArray, ReadsEntriesUpToNull) {
  std::vector<std::string> entries;
  for (int i = 0; i < 150; ++i) entries.push_back("K" + std::to_string(i) + "=v");  // > one block
  BufferMemory mem = fabricated(0x1000, entries, true);
  auto env = read_environ_array(mem, 0x1000);
  ASSERT_TRUE(env.ok()) << env.error().what();
  EXPECT_EQ(*env, entries);
  BufferMemory empty = fabricated(0x1000, {}, true);
  auto none = read_environ_array(empty, 0x1000);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(EnvironArray, BadMemoryIsAnError) {
  BufferMemory mem = fabricated(0x1000, {"A=1", "B=2"}, false);  // no terminating NULL
  auto unterminated = read_environ_array(mem, 0x1000);
  ASSERT_FALSE(unterminated.ok());
  EXPECT_EQ(unterminated.error().code, Errc::bad_data);
  EXPECT_FALSE(read_environ_array(mem, 0).ok());
  EXPECT_FALSE(read_environ_array(mem, 0x1001).ok());    // unaligned
  EXPECT_FALSE(read_environ_array(mem, 0x900000).ok());  // unmapped

  BufferMemory dangling;
  std::uint64_t ptrs[2] = {0xdead0000, 0};
  dangling.add(0x2000, std::vector<std::uint8_t>(reinterpret_cast<std::uint8_t*>(ptrs),
                                                 reinterpret_cast<std::uint8_t*>(ptrs) + 16));
  auto bad = read_environ_array(dangling, 0x2000);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Errc::bad_data);

  EnvironLimits tiny;
  tiny.max_entries = 1;
  BufferMemory two = fabricated(0x1000, {"A=1", "B=2"}, true);
  EXPECT_FALSE(read_environ_array(two, 0x1000, tiny).ok());
}

bool has(const std::vector<std::string>& env, const std::string& kv) {
  return std::find(env.begin(), env.end(), kv) != env.end();
}

TEST(ReadEnvironment, SeesSetenvAfterStart) {
  Child child(Child::kSetenvFork);
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(child.wait_ready());
  EXPECT_FALSE(has(process_environ_file(child.pid()), "HS_ENV_TEST=set-after-start"));
  auto target = open_live_target(child.pid());
  ASSERT_TRUE(target.ok()) << target.error().what();
  auto env = read_environment_from_memory(**target);
  ASSERT_TRUE(env.ok()) << env.error().what();
  EXPECT_TRUE(has(*env, "HS_ENV_TEST=set-after-start"));
  EXPECT_TRUE(has(read_environment(**target), "HS_ENV_TEST=set-after-start"));
}

TEST(ReadEnvironment, SeesPythonOsEnvironWrites) {
  const char* python = "/usr/bin/python3.11";
  if (access(python, X_OK) != 0) GTEST_SKIP() << python << " is not installed";
  Child child({python, "-c",
               "import os, sys, time\n"
               "os.environ['RANK'] = '7'\n"
               "os.environ['WORLD_SIZE'] = '8'\n"
               "os.write(1, b'ready\\n')\n"
               "time.sleep(60)\n"});
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(child.wait_ready());
  EXPECT_FALSE(has(process_environ_file(child.pid()), "RANK=7"));
  auto target = open_live_target(child.pid());
  ASSERT_TRUE(target.ok()) << target.error().what();
  auto env = read_environment(**target);
  EXPECT_TRUE(has(env, "RANK=7"));
  EXPECT_TRUE(has(env, "WORLD_SIZE=8"));
}

}  // namespace
}  // namespace hangscan
