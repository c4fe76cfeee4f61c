// SPDX-License-Identifier: GPL-2.0
/* hangscan's quiet dump: the registers and top of the user stack of every sleeping thread of one
 * process, taken without stopping or waking it (docs/design.md, "The quiet path").
 *
 * Why an iterator: a sleepable task iterator runs in hangscan's own context, so it may read
 * another task's user memory (bpf_copy_from_user_task) while that task sleeps; nothing is
 * attached to any event of the machine, and the program lives only as long as its file
 * descriptors (one run of hangscan: loaded once, one iterator link per process). User space
 * runs it twice per process: the first pass copies, the second
 * (copy_stacks 0) only reads each thread's sleep sequence, which proves that a thread did not
 * run between the two passes, so everything read of it in between is of one sleep.
 *
 *
 * No Python frames are walked here: user space reads a sleeping thread's Python frames between
 * the two passes, inside the same proven sleep. A walker here (bpf/py_frames.bpf.h, as the
 * recorder's samples use) made the program 3,263 verified instructions against a few hundred,
 * about 4 ms of verification on every run, and saved no measurable time even at 200 Python
 * threads (docs/performance.md).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "snapshot_events.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before each pass (passes of one run take turns): the process whose threads
 * are read. The link's pid filter (Linux 6.1+) already limits the iterator to it. */
volatile __u32 target_tgid = 0;
/* Set by user space before each pass: 1 copies registers and stacks, 0 reads sequences only. */
volatile __u32 copy_stacks = 1;

struct snap_scratch {
  struct hs_snap_thread h;
  __u8 stack[HS_SNAP_STACK_BYTES];
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct snap_scratch);
} scratch SEC(".maps");

#define HS_TASK_INTERRUPTIBLE 0x1
#define HS_TASK_UNINTERRUPTIBLE 0x2
#define HS_TASK_STOPPED_OR_TRACED 0xc

/* Off CPU, asleep in the kernel, not in a job-control or ptrace stop (volatile: read again at
 * each call). */
static __always_inline bool asleep(struct task_struct* t, __u64* state) {
  unsigned int s = *(volatile unsigned int*)&t->__state;
  *state = s;
  return *(volatile int*)&t->on_cpu == 0 &&
         (s & (HS_TASK_INTERRUPTIBLE | HS_TASK_UNINTERRUPTIBLE)) != 0 &&
         (s & HS_TASK_STOPPED_OR_TRACED) == 0;
}

static __always_inline __u64 sleep_seq(struct task_struct* t) {
  return *(volatile unsigned long*)&t->nvcsw + *(volatile unsigned long*)&t->nivcsw;
}

/* The top of the user stack from sp up, page by page; ends where the stack's mapping ends. */
static __always_inline __u32 copy_stack(__u8* dst, __u64 sp, struct task_struct* t) {
  __u32 len = 0;
  for (int i = 0; i < HS_SNAP_STACK_PAGES; i++) {
    __u64 at = sp + (__u64)i * HS_STACK_PAGE;
    if (bpf_copy_from_user_task(&dst[i * HS_STACK_PAGE], HS_STACK_PAGE, (void*)at, t, 0) == 0) {
      len += HS_STACK_PAGE;
      continue;
    }
    __u32 below = HS_STACK_PAGE - (at & (HS_STACK_PAGE - 1));
    if (below < HS_STACK_PAGE &&
        bpf_copy_from_user_task(&dst[i * HS_STACK_PAGE], below, (void*)at, t, 0) == 0)
      len += below;
    break;
  }
  return len;
}

SEC("iter.s/task")
int snapshot_threads(struct bpf_iter__task* ctx) {
  struct task_struct* t = ctx->task;
  if (!t || t->tgid != target_tgid) return 0;
  __u32 zero = 0;
  struct snap_scratch* s = bpf_map_lookup_elem(&scratch, &zero);
  if (!s) return 0;
  struct hs_snap_thread* h = &s->h;
  __builtin_memset(h, 0, sizeof(*h));
  h->tid = t->pid;
  __u64 seq = sleep_seq(t);
  h->seq = seq;
  __u64 state = 0;
  bool before = asleep(t, &state);
  h->state = state;
  if (before && copy_stacks) {
    struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(t);
    bpf_probe_read_kernel(&h->regs, sizeof(h->regs), regs);
    h->fs_base = BPF_CORE_READ(t, thread.fsbase);
    h->stack_len = copy_stack(s->stack, h->regs.sp, t);
    h->flags |= HS_SNAP_COPIED;
  }
  /* Read again after the copy: a thread that ran meanwhile left a CPU at least once. */
  if (before && asleep(t, &state) && sleep_seq(t) == seq) h->flags |= HS_SNAP_ASLEEP;
  bpf_seq_write(ctx->meta->seq, h, sizeof(*h));
  __u32 len = h->stack_len;
  if (len > HS_SNAP_STACK_BYTES) len = HS_SNAP_STACK_BYTES;
  if (len > 0) bpf_seq_write(ctx->meta->seq, s->stack, len);
  return 0;
}
