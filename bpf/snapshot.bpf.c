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
 * In a Python process (user space sets py_proc) the first pass also walks each sleeping
 * thread's Python frame chain (bpf/py_frames.bpf.h, the walker the recorder's samples use),
 * between the same two reads of its sleep sequence: its frames are of the same sleep as its
 * registers and stack. Its thread state is looked up in a tid map (py_tstates) that the pass
 * fills once, at its first sleeping thread, from one walk of the interpreter's list: a walk of
 * the list per thread read ~N^2/2 thread states for N threads. The entry is only a guess: the
 * walker checks that it names this thread (py_is_current) and walks the list where it does not.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "snapshot_events.h"

#define HS_PY_REMOTE 1 /* the walked threads are not the current task */
#include "py_frames.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before each pass (passes of one run take turns): the process whose threads
 * are read. The link's pid filter (Linux 6.1+) already limits the iterator to it. */
volatile __u32 target_tgid = 0;
/* Set by user space before each pass: 1 copies registers and stacks, 0 reads sequences only. */
volatile __u32 copy_stacks = 1;
/* Set by user space before each pass: the target's interpreter (header_len 0: walk no Python
 * frames, as for a process that is not Python or a layout the walker cannot read). */
struct hs_py_proc py_proc = {};

/* Set by user space before each copying pass of a Python process: a number no earlier pass of
 * this load used. The tid map's entries of other passes (other processes, older lists) are
 * ignored. */
volatile __u64 py_pass = 0;
/* The pass whose list the tid map holds (written by the program at the pass's first walk). */
__u64 py_indexed_pass = 0;

/* The tid map: the key by which py_is_current knows a thread (its pthread_t, which is its fs
 * base, where the layout has it; else its native id) -> its thread state, and the pass that put
 * it there. Why LRU: entries are never deleted, the oldest make room. */
struct py_tstate {
  __u64 tstate;
  __u64 pass;
};

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, HS_SNAP_PY_MAP_ENTRIES);
  __type(key, __u64);
  __type(value, struct py_tstate);
} py_tstates SEC(".maps");

/* The tid map's key of a thread, as the thread's own reads give it; 0: none. */
static __always_inline __u64 py_key_of_thread(__u32 tid, __u64 fs_base) {
  return py_proc.tstate_thread_id >= 0 ? fs_base : tid;
}

/* One thread state of the list into the tid map (a bpf_loop step, as py_thread_step). */
struct py_index {
  struct task_struct* task;
  __u64 at;
  struct py_tstate v;
};

static long py_index_step(__u32 i, void* arg) {
  struct py_index* x = arg;
  if (x->at == 0) return 1;
  __s32 off =
      py_proc.tstate_thread_id >= 0 ? py_proc.tstate_thread_id : py_proc.tstate_native_thread_id;
  __u64 key = py_user_u64(x->task, x->at + off);
  x->v.tstate = x->at;
  /* The first of the list wins, as in the walk (a dead thread's state may linger behind). */
  struct py_tstate* had = key != 0 ? bpf_map_lookup_elem(&py_tstates, &key) : 0;
  if (key != 0 && !(had && had->pass == x->v.pass))
    bpf_map_update_elem(&py_tstates, &key, &x->v, BPF_ANY);
  x->at = py_user_u64(x->task, x->at + py_proc.tstate_next);
  return 0;
}

/* The interpreter's list into the tid map for pass `pass`, read through `t` (every thread of the
 * process shares its memory). */
static __always_inline void py_fill_tstates(struct task_struct* t, __u64 pass) {
  struct py_index x = {.task = t, .v = {.pass = pass}};
  __u64 interp = py_user_u64(t, py_proc.interp_head_ptr);
  if (interp == 0) return;
  x.at = py_user_u64(t, interp + py_proc.interp_threads_head);
  bpf_loop(HS_SNAP_PY_INDEXED, py_index_step, &x, 0);
}

/* Thread `t`'s thread state as the tid map has it (0: not there); fills the map first when this
 * pass has not. */
static __always_inline __u64 py_lookup_tstate(struct task_struct* t, __u64 fs_base) {
  __u64 pass = py_pass; /* 0: no pass; no entry has it */
  if (py_indexed_pass != pass) {
    py_indexed_pass = pass;
    py_fill_tstates(t, pass);
  }
  __u64 key = py_key_of_thread(t->pid, fs_base); /* 0: no entry has it */
  struct py_tstate* v = bpf_map_lookup_elem(&py_tstates, &key);
  return v && v->pass == pass ? v->tstate : 0;
}

struct snap_scratch {
  struct hs_snap_thread h;
  __u8 stack[HS_SNAP_STACK_BYTES];
  struct hs_py_stack py;
  __u8 py_buf[HS_PY_HEADER];
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
    if (py_proc.header_len != 0) {
      __u64 tstate = py_lookup_tstate(t, h->fs_base);
      py_walk_thread(&s->py, &py_proc, t, h->fs_base, s->py_buf, &tstate);
      h->flags |= HS_SNAP_PY;
    }
  }
  /* Read again after the copy: a thread that ran meanwhile left a CPU at least once. */
  if (before && asleep(t, &state) && sleep_seq(t) == seq) h->flags |= HS_SNAP_ASLEEP;
  bpf_seq_write(ctx->meta->seq, h, sizeof(*h));
  __u32 len = h->stack_len;
  if (len > HS_SNAP_STACK_BYTES) len = HS_SNAP_STACK_BYTES;
  if (len > 0) bpf_seq_write(ctx->meta->seq, s->stack, len);
  if (h->flags & HS_SNAP_PY) bpf_seq_write(ctx->meta->seq, &s->py, sizeof(s->py));
  return 0;
}
