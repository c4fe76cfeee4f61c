// The floor under the recorder's scheduler programs (tests/bench/bpf_floor.py).
//
// Why: on_sched_switch and on_sched_wakeup run for every switch and wake-up of the machine. What
// part of their cost is the kernel's own (the tracepoint's call into BPF, the run-time
// accounting that measures it) and what part each thing they must do (find a task's state, read
// the clock) is measured here with programs that do only that, attached to the same
// tracepoints while the bench job runs. Nothing here is used by hangscan itself.
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, __u64);
} floor_states SEC(".maps");

__u64 floor_sink = 0;  // what the programs compute goes here, so nothing is optimized away

/* Nothing: the tracepoint's call and the accounting alone. */
SEC("tp_btf/sched_switch")
int BPF_PROG(empty_switch, bool preempt, struct task_struct* prev, struct task_struct* next) {
  return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(empty_wakeup, struct task_struct* p) { return 0; }

/* One task-storage lookup that finds nothing (a task that is not watched). */
SEC("tp_btf/sched_switch")
int BPF_PROG(lookup_switch, bool preempt, struct task_struct* prev, struct task_struct* next) {
  if (bpf_task_storage_get(&floor_states, next, 0, 0)) floor_sink++;
  return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(lookup_wakeup, struct task_struct* p) {
  if (bpf_task_storage_get(&floor_states, p, 0, 0)) floor_sink++;
  return 0;
}

/* One read of the clock (CLOCK_MONOTONIC, as the recorder's sleep start and end). */
SEC("tp_btf/sched_switch")
int BPF_PROG(clock_switch, bool preempt, struct task_struct* prev, struct task_struct* next) {
  floor_sink += bpf_ktime_get_ns();
  return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(clock_wakeup, struct task_struct* p) {
  floor_sink += bpf_ktime_get_ns();
  return 0;
}
