// Records decoded from the recorder's ring-buffer bytes, wait loops (exit codes in words:
// process_facts_test.cpp).
#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <memory>
#include <vector>

#include "watch/records.h"
#include "watch/watcher.h"
#include "watch_events.h"

namespace hangscan {
namespace {

template <typename T>
std::span<const std::uint8_t> bytes(const T& v) {
  return {reinterpret_cast<const std::uint8_t*>(&v), sizeof(v)};
}

TEST(WatchRecords, SignalNamesTheSenderFromTheHeader) {
  hs_signal e{};
  e.h.kind = HS_EV_SIGNAL;
  e.h.pid = 300;  // the sender
  e.h.tid = 301;
  e.h.ts_ns = 42;
  std::strcpy(e.h.comm, "kill");
  e.target_pid = 100;
  e.target_tid = 101;
  e.sig = SIGKILL;
  std::strcpy(e.target_comm, "python3");
  Recording out;
  ASSERT_TRUE(decode_record(bytes(e), out));
  ASSERT_EQ(out.events.size(), 1u);
  const EventRecord& r = out.events[0];
  EXPECT_EQ(r.kind, EventRecord::Kind::signal);
  EXPECT_EQ(r.pid, 100);
  EXPECT_EQ(r.tid, 101);
  EXPECT_EQ(r.comm, "python3");
  EXPECT_EQ(r.sender_pid, 300);
  EXPECT_EQ(r.sender_tid, 301);
  EXPECT_EQ(r.sender_comm, "kill");
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(r.ts_ns, 42);
}

// A sample of a Python process: its Python frames as the kernel copied them, innermost first,
// with their eval-loop calls (entry bits; 3.12+ shim markers; 3.11's _PyCFrame chain paired
// with the entries when the counts agree).
TEST(WatchRecords, PythonSampleFramesEntriesAndMarkers) {
  auto e = std::make_unique<hs_sample_py>();
  std::memset(e.get(), 0, sizeof(*e));
  e->s.h.kind = HS_EV_SAMPLE_PY;
  e->s.h.pid = 10;
  e->s.h.tid = 11;
  e->py.status = HS_PY_OK;
  e->py.nframes = 3;
  for (std::uint64_t i = 0; i < 3; ++i) e->py.f[i] = {0x1000 + i, 0x2000 + i, 0};
  e->py.entries[0] = 0b110;  // frames 1 and 2 start eval-loop calls
  e->py.f[2].marker = 0x7ffd0000;
  Recording out;
  ASSERT_TRUE(decode_record({reinterpret_cast<const std::uint8_t*>(e.get()), sizeof(*e)}, out));
  ASSERT_EQ(out.samples.size(), 1u);
  ASSERT_TRUE(out.samples[0].copy.python);
  const auto& t = *out.samples[0].copy.python;
  ASSERT_EQ(t.frames.size(), 3u);
  EXPECT_EQ(t.frames[1].code_addr, 0x1001u);
  EXPECT_EQ(t.frames[1].instr, 0x2001u);
  EXPECT_FALSE(t.frames[0].is_entry);
  EXPECT_TRUE(t.frames[1].is_entry);
  EXPECT_EQ(t.frames[2].eval_marker, 0x7ffd0000u);
  EXPECT_TRUE(t.error.empty());

  // 3.11: two _PyCFrames for the two entries, innermost first.
  e->py.f[2].marker = 0;
  e->py.ncalls = 2;
  e->py.calls[0] = 0xa0;
  e->py.calls[1] = 0xb0;
  ASSERT_TRUE(decode_record({reinterpret_cast<const std::uint8_t*>(e.get()), sizeof(*e)}, out));
  const auto& paired = *out.samples[1].copy.python;
  EXPECT_EQ(paired.frames[1].eval_marker, 0xa0u);
  EXPECT_EQ(paired.frames[2].eval_marker, 0xb0u);
  EXPECT_EQ(paired.frames[0].eval_marker, 0u);

  // A chain cut says so (and is not paired); a thread Python does not know has no frames.
  e->py.status = HS_PY_CUT;
  ASSERT_TRUE(decode_record({reinterpret_cast<const std::uint8_t*>(e.get()), sizeof(*e)}, out));
  EXPECT_NE(out.samples[2].copy.python->error.find("outer ones are missing"), std::string::npos);
  EXPECT_EQ(out.samples[2].copy.python->frames[1].eval_marker, 0u);
  e->py.status = HS_PY_NO_THREAD;
  ASSERT_TRUE(decode_record({reinterpret_cast<const std::uint8_t*>(e.get()), sizeof(*e)}, out));
  EXPECT_FALSE(out.samples[3].copy.python);
  // A record shorter than a Python sample is refused.
  EXPECT_FALSE(
      decode_record({reinterpret_cast<const std::uint8_t*>(e.get()), sizeof(hs_sample)}, out));
}

TEST(WatchRecords, SampleRegistersStackAndKernelStack) {
  auto e = std::make_unique<hs_sample>();
  std::memset(e.get(), 0, sizeof(*e));
  e->h.kind = HS_EV_SAMPLE;
  e->h.pid = 10;
  e->h.tid = 11;
  e->u.regs.ip = 0x401000;
  e->u.regs.sp = 0x7ffd0000;
  e->u.regs.bp = 0x7ffd0100;
  e->u.regs.bx = 7;
  e->u.fs_base = 0x7f0000001000;
  e->u.stack_len = 2 * HS_STACK_CHUNK;
  e->u.stack[0] = 0xab;
  e->u.stack[2 * HS_STACK_CHUNK - 1] = 0xcd;
  e->u.kstack_len = 2 * sizeof(std::uint64_t);
  e->u.kstack[0] = 0xffffffff81000010;
  e->u.kstack[1] = 0xffffffff81000020;
  e->in_kernel = 1;
  e->syscall_nr = 0;
  Recording out;
  ASSERT_TRUE(decode_record(bytes(*e), out));
  ASSERT_EQ(out.samples.size(), 1u);
  const SampleRecord& s = out.samples[0];
  EXPECT_EQ(s.pid, 10);
  EXPECT_EQ(s.tid, 11);
  EXPECT_EQ(s.copy.regs.pc(), 0x401000u);
  EXPECT_EQ(s.copy.regs.sp(), 0x7ffd0000u);
  EXPECT_EQ(s.copy.regs.raw.rbp, 0x7ffd0100u);
  EXPECT_EQ(s.copy.regs.raw.rbx, 7u);
  EXPECT_EQ(s.copy.regs.fs_base(), 0x7f0000001000u);
  EXPECT_EQ(s.copy.stack.start, 0x7ffd0000u);
  ASSERT_EQ(s.copy.stack.bytes.size(), 2u * HS_STACK_CHUNK);
  EXPECT_EQ(s.copy.stack.bytes.front(), 0xab);
  EXPECT_EQ(s.copy.stack.bytes.back(), 0xcd);
  EXPECT_EQ(s.copy.kernel, (std::vector<std::uint64_t>{0xffffffff81000010, 0xffffffff81000020}));
  EXPECT_TRUE(s.in_kernel);
  EXPECT_EQ(s.syscall_nr, 0);
}

hs_wait wait_of(std::uint32_t kind) {
  hs_wait w{};
  w.h.kind = kind;
  w.h.pid = 10;
  w.h.tid = 12;
  w.h.ts_ns = 5000;
  w.syscall_nr = 0;
  w.arg0 = 3;
  w.seq = 7;
  w.duration_ns = 300'000'000;
  w.waker_pid = 20;
  w.kstack_len = sizeof(std::uint64_t);
  w.kstack[0] = 0xffffffff81000030;
  return w;
}

TEST(WatchRecords, WaitWithoutAUserStack) {
  hs_wait w = wait_of(HS_EV_WAIT);
  Recording out;
  ASSERT_TRUE(decode_record(bytes(w), out));
  ASSERT_EQ(out.waits.size(), 1u);
  const WaitRecord& r = out.waits[0];
  EXPECT_EQ(r.pid, 10);
  EXPECT_EQ(r.tid, 12);
  EXPECT_EQ(r.seq, 7u);
  EXPECT_EQ(r.duration_ns, 300'000'000u);
  EXPECT_EQ(r.arg0, 3u);
  EXPECT_EQ(r.end_ns, 5000);
  EXPECT_EQ(r.waker_pid, 20);
  EXPECT_FALSE(r.has_user_stack);
  EXPECT_TRUE(r.copy.stack.bytes.empty());
  EXPECT_EQ(r.copy.kernel, (std::vector<std::uint64_t>{0xffffffff81000030}));
}

TEST(WatchRecords, WaitWithTheStackCopiedWhileItSlept) {
  auto e = std::make_unique<hs_wait_stack>();
  std::memset(e.get(), 0, sizeof(*e));
  e->w = wait_of(HS_EV_WAIT_STACK);
  e->u.regs.ip = 0x402000;
  e->u.regs.sp = 0x7ffd1000;
  e->u.stack_len = HS_STACK_CHUNK;
  e->u.stack[1] = 0x5a;
  Recording out;
  ASSERT_FALSE(decode_record(bytes(*e).first(sizeof(hs_wait)), out));  // cut short: dropped
  ASSERT_TRUE(decode_record(bytes(*e), out));
  ASSERT_EQ(out.waits.size(), 1u);
  const WaitRecord& r = out.waits[0];
  EXPECT_EQ(r.seq, 7u);
  EXPECT_EQ(r.duration_ns, 300'000'000u);
  ASSERT_TRUE(r.has_user_stack);
  EXPECT_EQ(r.copy.regs.pc(), 0x402000u);
  EXPECT_EQ(r.copy.stack.start, 0x7ffd1000u);
  ASSERT_EQ(r.copy.stack.bytes.size(), std::size_t{HS_STACK_CHUNK});
  EXPECT_EQ(r.copy.stack.bytes[1], 0x5a);
  // The kernel stack is the wait's (where it slept), not the copy's (none).
  EXPECT_EQ(r.copy.kernel, (std::vector<std::uint64_t>{0xffffffff81000030}));
}

TEST(WatchRecords, ShortOrUnknownRecordsAreDropped) {
  hs_exit e{};
  e.h.kind = HS_EV_EXIT;
  Recording out;
  EXPECT_FALSE(decode_record(bytes(e).first(sizeof(e) - 1), out));
  e.h.kind = 99;
  EXPECT_FALSE(decode_record(bytes(e), out));
  EXPECT_TRUE(out.events.empty());
}

std::vector<Frame> frames(std::initializer_list<const char*> names) {
  std::vector<Frame> out;
  for (const char* n : names) out.push_back(Frame{FrameKind::native, n});
  return out;
}

TEST(WatchProgress, KnownWaitAndPollLoops) {
  EXPECT_TRUE(in_wait_loop(frames({"sched_yield", "opal_progress", "main"})));
  EXPECT_TRUE(in_wait_loop(frames({"mca_btl_vader_component_progress", "opal_progress"})));
  EXPECT_TRUE(in_wait_loop(frames({"__GI___poll", "main"})));
  EXPECT_TRUE(in_wait_loop(frames({"__futex_abstimed_wait_common", "pthread_cond_wait"})));
  EXPECT_FALSE(in_wait_loop(frames({"spin_forever", "spin_main", "start_thread"})));
  EXPECT_FALSE(in_wait_loop(frames({"_PyEval_EvalFrameDefault", "PyEval_EvalCode"})));
  // Only the innermost four frames count: a loop that waits is at the top of the stack.
  EXPECT_FALSE(in_wait_loop(frames({"compute", "step", "train", "loop", "poll_forever_outer"})));
  EXPECT_FALSE(in_wait_loop({}));
}

}  // namespace
}  // namespace hangscan
