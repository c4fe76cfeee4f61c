// FrameStack (shared frames, copy on write) and StackTable (one copy of each distinct stack).
#include "util/stack_table.h"

#include <gtest/gtest.h>

namespace hangscan {
namespace {

Frame fn(const char* name, int line) {
  Frame f;
  f.kind = FrameKind::python;
  f.function = name;
  f.file = "/t/a.py";
  f.line = line;
  return f;
}

TEST(FrameStack, ReadsLikeAVectorAndSharesOnCopy) {
  FrameStack a{fn("inner", 1), fn("outer", 2)};
  FrameStack b = a;
  EXPECT_EQ(a.id(), b.id());
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].function, "outer");
  const std::vector<Frame>& v = b;
  EXPECT_EQ(v.front().function, "inner");
  EXPECT_EQ(FrameStack{}.id(), nullptr);
  EXPECT_TRUE(FrameStack{}.empty());
}

TEST(FrameStack, WritingCopiesOnlyTheWriter) {
  FrameStack a{fn("inner", 1), fn("outer", 2)};
  FrameStack b = a;
  b[0].line = 7;  // non-const access: b gets its own frames
  EXPECT_NE(a.id(), b.id());
  EXPECT_EQ(a[0].line, 1);
  EXPECT_EQ(b[0].line, 7);
  b.push_back(fn("top", 3));
  b.erase(b.begin());
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].function, "outer");
  EXPECT_EQ(a.size(), 2u);
  const void* own = b.id();
  b.push_back(fn("more", 4));  // sole owner: no copy
  EXPECT_EQ(b.id(), own);
  b.clear();
  EXPECT_TRUE(b.empty());
}

TEST(StackTable, EqualStacksShareOneCopy) {
  StackTable table;
  FrameStack a = table.intern(FrameStack{fn("x", 1), fn("y", 2)});
  FrameStack b = table.intern(FrameStack{fn("x", 1), fn("y", 2)});
  FrameStack c = table.intern(FrameStack{fn("x", 1), fn("y", 3)});
  EXPECT_EQ(a.id(), b.id());
  EXPECT_NE(a.id(), c.id());
  EXPECT_EQ(table.size(), 2u);
  EXPECT_TRUE(table.intern(FrameStack{}).empty());
}

TEST(StackTable, InternJobKeepsEveryThreadsFrames) {
  JobSnapshot job;
  for (int i = 0; i < 3; ++i) {
    ProcessSnapshot p;
    p.pid = 10 + i;
    ThreadSnapshot t;
    t.tid = p.pid;
    t.frames = {fn("wait", 5), fn(i == 2 ? "odd" : "main", 9)};
    t.kernel_frames = {fn("futex", 0)};
    p.threads.push_back(t);
    job.processes.push_back(p);
  }
  JobSnapshot before = job;
  StackTable table;
  table.intern_job(job);
  EXPECT_EQ(table.size(), 3u);  // two thread stacks and one kernel stack
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(job.processes[i].threads[0].frames, before.processes[i].threads[0].frames);
    EXPECT_EQ(job.processes[i].threads[0].kernel_frames,
              before.processes[i].threads[0].kernel_frames);
  }
  EXPECT_EQ(job.processes[0].threads[0].frames.id(), job.processes[1].threads[0].frames.id());
  EXPECT_NE(job.processes[0].threads[0].frames.id(), job.processes[2].threads[0].frames.id());
}

}  // namespace
}  // namespace hangscan
