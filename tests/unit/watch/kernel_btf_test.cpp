// What the recorder learns from a kernel's BTF, checked on BTF built here with the layouts of
// kernels this machine does not run: x86-64's pcpu_hot (6.2-6.14), which keeps the preempt
// count inside an anonymous union, and kernels without group scheduling or the new tracepoints.
#include <gtest/gtest.h>

#include "watch/kernel_btf.h"

#ifdef HANGSCAN_HAVE_BPF

#include <bpf/btf.h>

namespace hangscan {
namespace {

constexpr long kRunqueues = 0x3000;

struct Layout {
  bool cfs_rq = true;          // sched_entity has cfs_rq (group scheduling)
  bool preempt_count = false;  // a __preempt_count per-CPU int (Linux 6.15+, and before 6.2)
  bool pcpu_hot = false;       // x86-64's struct pcpu_hot, its count inside anonymous members
  bool hot_has_count = true;
};

// A kernel's BTF reduced to what preempt_count_from_rq() reads.
btf* kernel_with(const Layout& l) {
  btf* b = btf__new_empty();
  int i32 = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
  int u8 = btf__add_int(b, "unsigned char", 1, 0);
  int ptr = btf__add_ptr(b, 0);
  btf__add_struct(b, "sched_entity", 16);
  btf__add_field(b, "load", i32, 0, 0);
  if (l.cfs_rq) btf__add_field(b, "cfs_rq", ptr, 64, 0);
  int rq = btf__add_struct(b, "rq", 8);
  btf__add_field(b, "nr_running", i32, 0, 0);
  int hot = 0;
  if (l.pcpu_hot) {
    // struct pcpu_hot { union { struct { current_task; preempt_count; cpu_number; }; u8 pad[64]; };
    // };
    int inner = btf__add_struct(b, nullptr, 16);
    btf__add_field(b, "current_task", ptr, 0, 0);
    btf__add_field(b, l.hot_has_count ? "preempt_count" : "other_count", i32, 64, 0);
    btf__add_field(b, "cpu_number", i32, 96, 0);
    int pad = btf__add_array(b, i32, u8, 64);
    int un = btf__add_union(b, nullptr, 64);
    btf__add_field(b, nullptr, inner, 0, 0);
    btf__add_field(b, "pad", pad, 0, 0);
    hot = btf__add_struct(b, "pcpu_hot", 64);
    btf__add_field(b, nullptr, un, 0, 0);
  }
  int v_rq = btf__add_var(b, "runqueues", BTF_VAR_GLOBAL_ALLOCATED, rq);
  int v_pc =
      l.preempt_count ? btf__add_var(b, "__preempt_count", BTF_VAR_GLOBAL_ALLOCATED, i32) : 0;
  int v_hot = hot ? btf__add_var(b, "pcpu_hot", BTF_VAR_GLOBAL_ALLOCATED, hot) : 0;
  btf__add_datasec(b, ".data..percpu", 0x4000);
  if (v_hot) btf__add_datasec_var_info(b, v_hot, 0x1000, 64);
  if (v_pc) btf__add_datasec_var_info(b, v_pc, 0x2000, 4);
  btf__add_datasec_var_info(b, v_rq, kRunqueues, 8);
  return b;
}

TEST(KernelBtf, PreemptCountOfAPerCpuInt) {
  KernelBtf k(kernel_with({.preempt_count = true}));
  EXPECT_EQ(k.preempt_count_from_rq(), 0x2000 - kRunqueues);
}

// 6.2-6.14: pcpu_hot.preempt_count, 8 bytes into an anonymous struct in an anonymous union.
TEST(KernelBtf, PreemptCountInsidePcpuHot) {
  KernelBtf k(kernel_with({.pcpu_hot = true}));
  EXPECT_EQ(k.preempt_count_from_rq(), 0x1000 + 8 - kRunqueues);
}

TEST(KernelBtf, ThePerCpuIntIsPreferredWhereBothAre) {
  KernelBtf k(kernel_with({.preempt_count = true, .pcpu_hot = true}));
  EXPECT_EQ(k.preempt_count_from_rq(), 0x2000 - kRunqueues);
}

TEST(KernelBtf, UnknownWithoutTheCountOrGroupScheduling) {
  EXPECT_EQ(KernelBtf(kernel_with({})).preempt_count_from_rq(), 0);
  EXPECT_EQ(
      KernelBtf(kernel_with({.pcpu_hot = true, .hot_has_count = false})).preempt_count_from_rq(),
      0);
  EXPECT_EQ(
      KernelBtf(kernel_with({.cfs_rq = false, .preempt_count = true})).preempt_count_from_rq(), 0);
  EXPECT_EQ(KernelBtf(nullptr).preempt_count_from_rq(), 0);
}

// btf_trace_mark_victim: a pointer to a function of (void *ctx, the tracepoint's arguments).
btf* kernel_with_mark_victim(bool task) {
  btf* b = btf__new_empty();
  int i32 = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
  int ptr = btf__add_ptr(b, 0);
  int proto = btf__add_func_proto(b, 0);
  btf__add_func_param(b, "ctx", ptr);
  btf__add_func_param(b, task ? "task" : "pid", task ? ptr : i32);
  int fptr = btf__add_ptr(b, proto);
  btf__add_typedef(b, "btf_trace_mark_victim", fptr);
  btf__add_typedef(b, "btf_trace_sock_send_length", fptr);
  return b;
}

TEST(KernelBtf, MarkVictimPassesATaskOrAPid) {
  EXPECT_TRUE(KernelBtf(kernel_with_mark_victim(true)).mark_victim_takes_task());
  EXPECT_FALSE(KernelBtf(kernel_with_mark_victim(false)).mark_victim_takes_task());
  EXPECT_FALSE(KernelBtf(kernel_with({})).mark_victim_takes_task());
}

TEST(KernelBtf, SocketTracepointsNeedBoth) {
  EXPECT_FALSE(KernelBtf(kernel_with_mark_victim(true)).socket_tracepoints());  // send only
  EXPECT_FALSE(KernelBtf(nullptr).socket_tracepoints());
}

}  // namespace
}  // namespace hangscan

#else

TEST(KernelBtf, NeedsLibbpf) { GTEST_SKIP() << "built without libbpf (HANGSCAN_HAVE_BPF)"; }

#endif
