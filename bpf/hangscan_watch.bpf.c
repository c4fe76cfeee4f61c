// SPDX-License-Identifier: GPL-2.0
/* hangscan's recorder: what the watched processes do over time (docs/watch.md).
 *
 * Why these programs: on-CPU samples say where each rank spends its CPU; long sleeps, with the
 * system call they are in and who woke them, say where it waits (their user stacks are copied
 * by the thread itself as the wait ends, or by a sleepable task iterator while it still sleeps:
 * wait_stacks.bpf.h); exits, signals and OOM victims say how a
 * rank ended; socket sends and receives that moved bytes are the watchdog's progress. No system
 * call hook: one costs every system call of the machine (docs/performance.md). Every record
 * carries what user space needs to finish it later (registers and the top of the user stack for
 * an unwind with libdw): nothing is unwound here, since Debian's python and libc have no frame
 * pointers. Only processes in `watched` are recorded; every thread of them gets a
 * `thread_state` (task storage), and only threads that have one pay more than one lookup in the
 * scheduler programs. Children join when `follow_children` is set.
 */
/* Linux 6.18's task work for BPF, declared here whatever the build machine's kernel: the map
 * value field must be named `struct bpf_task_work` for the kernel to recognise it, so the
 * definition vmlinux.h has (or not) is renamed out of the way. */
#define bpf_task_work hs_vmlinux_bpf_task_work
#include "vmlinux.h"
#undef bpf_task_work
struct bpf_task_work {
  __u64 __opaque;
} __attribute__((aligned(8)));
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "watch_events.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load (the skeleton's rodata). */
const volatile __u64 wait_threshold_ns = 10000000; /* a sleep this long is a wait */
const volatile __u8 follow_children = 0;
/* Twice the period of the iterator's passes (user space runs it): a sleep is copied once it is
 * this close to its process's shortest kept wait, so one that ends between two passes longer
 * than that wait (and is then sent) was copied at the pass before. */
const volatile __u64 copy_margin_ns = 200000000;
/* The longest waits the report keeps per process (0, or above HS_TOP_WAITS_MAX: send all). */
const volatile __u32 top_waits = 5;
/* 1 where the kernel has bpf_task_work_schedule_resume_impl (Linux 6.18; the loader checks its
 * BTF): a wait that is sent gets its user stack from the thread itself, copied on its way back
 * to user space (copy_on_resume), not from the iterator's passes while it sleeps. */
const volatile __u8 copy_at_resume = 0;
/* The reader is woken when this much is waiting in the ring; it also drains every second (every
 * 100 ms where the iterator copies wait stacks). */
#define WAKE_AT_BYTES (2 << 20)

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32); /* tgid */
  __type(value, struct hs_proc_stats);
} watched SEC(".maps");

#define thread_state hs_thread_state

/* Why task storage: the scheduler programs run for every task of the machine; a task without a
 * state (not watched) costs one lookup that finds nothing, with no hash of a tid. */
struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct thread_state);
} thread_states SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 << 20);
} events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, HS_CNT_MAX);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 which) {
  __u64* v = bpf_map_lookup_elem(&counters, &which);
  if (v) *v += 1;
}

static __always_inline struct hs_proc_stats* watched_proc(__u32 tgid) {
  return bpf_map_lookup_elem(&watched, &tgid);
}

static __always_inline void* reserve(__u64 size) {
  void* e = bpf_ringbuf_reserve(&events, size, 0);
  count(e ? HS_CNT_EVENTS : HS_CNT_LOST);
  return e;
}

/* A wake-up per record would cost the reader an epoll return and a copy each: samples and
 * waits are batched, and the reader woken only when the ring fills up (an eighth of it). */
static __always_inline void submit(void* e) {
  __u64 flag = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= WAKE_AT_BYTES ? BPF_RB_FORCE_WAKEUP
                                                                              : BPF_RB_NO_WAKEUP;
  bpf_ringbuf_submit(e, flag);
}

/* Exits, signals and OOM victims are rare and end windows (the last exit; a window ended right
 * after a kill must still show it): the reader is woken at once. */
static __always_inline void submit_now(void* e) { bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP); }

/* Whether a wait of `dur` ns is among the `top_waits` longest of its process so far (then it
 * takes the place of the shortest kept one and is sent). The report keeps only those, so one
 * that is not would be dropped there: it is only counted. Two CPUs racing on the same slot can
 * only lose a kept value, which lowers the bar (more sent), never raises it. */
static __always_inline __u64 shortest_kept(struct hs_proc_stats* st, __u32* at) {
  __u32 min_i = 0;
  __u64 min_v = ~0ULL;
  for (__u32 i = 0; i < HS_TOP_WAITS_MAX && i < top_waits; i++) {
    __u64 v = st->top_wait_ns[i];
    if (v < min_v) {
      min_v = v;
      min_i = i;
    }
  }
  *at = min_i;
  return min_v;
}

/* The slot a wait sent takes: HS_SLOT_NOT_SENT for one no longer than every kept wait (counted
 * only), HS_SLOT_SEND_ALL when every wait is sent. The caller writes it (keep_wait) only once the
 * wait's record has its place in the ring: a lost wait (counted in `lost`) takes no slot, so it
 * does not raise the bar for the next ones. */
#define HS_SLOT_NOT_SENT 0xffffffffu
#define HS_SLOT_SEND_ALL 0xfffffffeu
static __always_inline __u32 among_longest(struct hs_proc_stats* st, __u64 dur) {
  __sync_fetch_and_add(&st->waits, 1);
  if (top_waits == 0 || top_waits > HS_TOP_WAITS_MAX) return HS_SLOT_SEND_ALL;
  __u32 min_i = 0;
  __u64 min_v = shortest_kept(st, &min_i);
  if (dur <= min_v) {
    __sync_fetch_and_add(&st->waits_not_sent, 1);
    return HS_SLOT_NOT_SENT;
  }
  return min_i;
}

static __always_inline void keep_wait(struct hs_proc_stats* st, __u32 slot, __u64 dur) {
  if (slot < HS_TOP_WAITS_MAX) st->top_wait_ns[slot & (HS_TOP_WAITS_MAX - 1)] = dur;
}

/* The kernel stack where a thread that is about to run again slept (it is not running yet, so
 * its stack is as it was when it left the CPU). Taken only for waits long enough to report. */
static __always_inline __u32 sleep_stack(struct task_struct* t, __u64* out, __u32 size) {
  long n = bpf_get_task_stack(t, out, size, 0);
  return n > 0 ? n : 0;
}

static __always_inline void fill_header(struct hs_header* h, __u32 kind, struct task_struct* t) {
  h->kind = kind;
  h->pid = BPF_CORE_READ(t, tgid);
  h->tid = BPF_CORE_READ(t, pid);
  h->cpu = bpf_get_smp_processor_id();
  h->ts_ns = bpf_ktime_get_ns();
  BPF_CORE_READ_STR_INTO(&h->comm, t, comm);
}

/* Whether saved user registers are those of a system call in progress: the entry code keeps
 * the number in orig_ax and sets ax to -ENOSYS until the call returns (a fault or an interrupt
 * leaves the user's ax there, and orig_ax is its error code or -1). */
#define HS_ENOSYS 38
static __always_inline bool in_syscall(const struct hs_regs* r) {
  return (__s64)r->orig_ax >= 0 && (__s64)r->ax == -HS_ENOSYS;
}

/* One read of user memory: the current task's (any program) or another task's (sleepable
 * programs only; `remote` is a constant, so the other helper is not in the program). */
static __always_inline long read_user(void* dst, __u32 size, __u64 src, struct task_struct* t,
                                      bool remote) {
  if (remote) return bpf_copy_from_user_task(dst, size, (void*)src, t, 0);
  return bpf_probe_read_user(dst, size, (void*)src);
}

/* The top of a user stack from sp up, into `dst` (HS_STACK_BYTES): whole 4-KiB reads (each read
 * has a cost of its own, a page walk for another task's memory, beyond the bytes it copies).
 * Where one fails, the stack's mapping ends inside it, and a mapping ends on a page boundary:
 * the part of that read below the boundary is read again alone, so the copy keeps every
 * readable byte up to the end of the stack (a thread's outermost frames lie right below it). */
static __always_inline __u32 copy_stack(__u8* dst, __u64 sp, struct task_struct* t, bool remote) {
  __u32 len = 0;
  for (int i = 0; i < HS_STACK_BYTES / HS_STACK_PAGE; i++) {
    __u64 at = sp + (__u64)i * HS_STACK_PAGE;
    if (read_user(&dst[i * HS_STACK_PAGE], HS_STACK_PAGE, at, t, remote) == 0) {
      len += HS_STACK_PAGE;
      continue;
    }
    __u32 below = HS_STACK_PAGE - (at & (HS_STACK_PAGE - 1)); /* 1..4096: to the boundary */
    if (below < HS_STACK_PAGE && read_user(&dst[i * HS_STACK_PAGE], below, at, t, remote) == 0)
      len += below;
    break;
  }
  if (len == 0) count(HS_CNT_STACK_FAULTS);
  return len;
}

/* Registers and the top of the user stack of the current task, for an unwind in user space. */
static __always_inline void copy_user_stack(struct hs_user_stack* u, struct task_struct* task) {
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(task);
  bpf_probe_read_kernel(&u->regs, sizeof(u->regs), regs);
  u->fs_base = BPF_CORE_READ(task, thread.fsbase);
  u->stack_len = copy_stack(u->stack, u->regs.sp, task, false);
}

#include "py_frames.bpf.h"

/* Where each watched Python process keeps its interpreter (filled by user space). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32); /* tgid */
  __type(value, struct hs_py_proc);
} py_procs SEC(".maps");

struct hs_py_scratch {
  __u8 b[HS_PY_HEADER];
};

/* One frame's first bytes, read at once (per CPU: a sample runs with interrupts off). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct hs_py_scratch);
} py_scratch SEC(".maps");

/* At an on-CPU sample: the current thread's Python frames, its thread state remembered in its
 * recorder state (interrupts off: the CPU's scratch is this walk's alone). */
static __always_inline void py_sample(struct hs_py_stack* out, const struct hs_py_proc* c,
                                      struct task_struct* task, __u64 fs_base) {
  __u32 zero = 0;
  __u8* buf = bpf_map_lookup_elem(&py_scratch, &zero);
  if (buf) {
    struct hs_thread_state* ts = bpf_task_storage_get(&thread_states, task, 0, 0);
    py_walk_thread(out, c, task, fs_base, buf, ts ? &ts->py_tstate : 0);
    return;
  }
  out->status = HS_PY_NO_THREAD;
  out->nframes = 0;
  out->ncalls = 0;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  struct hs_proc_stats* st = watched_proc(tgid);
  if (!st) return 0;
  __sync_fetch_and_add(&st->samples, 1);
  /* Two reservations of constant sizes (the verifier checks each): with Python frames for a
   * Python process. */
  struct hs_py_proc* py = bpf_map_lookup_elem(&py_procs, &tgid);
  struct hs_sample* e = 0;
  struct hs_sample_py* ep = 0;
  if (py) {
    ep = reserve(sizeof(*ep));
    e = ep ? &ep->s : 0;
  } else {
    e = reserve(sizeof(*e));
  }
  if (!e) return 0;
  struct task_struct* task = bpf_get_current_task_btf();
  fill_header(&e->h, ep ? HS_EV_SAMPLE_PY : HS_EV_SAMPLE, task);
  /* The context allows whole-register loads only: a volatile 8-byte read of cs. */
  __u64 cs = *(volatile __u64*)&ctx->regs.cs;
  e->in_kernel = (cs & 3) == 0;
  copy_user_stack(&e->u, task);
  e->syscall_nr = e->in_kernel && in_syscall(&e->u.regs) ? (__s32)e->u.regs.orig_ax : -1;
  long n = e->in_kernel ? bpf_get_stack(ctx, e->u.kstack, sizeof(e->u.kstack), 0) : 0;
  e->u.kstack_len = n > 0 ? n : 0;
  if (ep && py) py_sample(&ep->py, py, task, e->u.fs_base);
  submit(e);
  return 0;
}

static __always_inline struct thread_state* state_of(struct task_struct* t) {
  return bpf_task_storage_get(&thread_states, t, 0, 0);
}

/* A thread leaves the CPU to wait (not preempted): its sleep begins, in the system call its
 * saved registers say (the number and first argument it entered with), or in none. */
static __always_inline void begin_sleep(struct thread_state* ts, struct task_struct* t, __u64 now) {
  struct pt_regs* r = (struct pt_regs*)bpf_task_pt_regs(t);
  __s64 nr = r->orig_ax;
  bool sys = nr >= 0 && (__s64)r->ax == -HS_ENOSYS; /* as in_syscall() */
  ts->syscall_nr = sys ? nr : -1;
  ts->arg0 = sys ? r->di : 0;
  ts->waker_pid = 0;
  ts->waker_tid = 0;
  ts->offcpu_start_ns = now;
}

#include "wait_stacks.bpf.h"

/* A thread runs again after a sleep: the sleep ends (seq moves on, which voids a stack copy
 * the iterator is making of it); one at least wait_threshold_ns long among its process's
 * longest is sent, with the kernel stack where it slept (it has not run yet: as it left it). */
static __always_inline void end_sleep(struct thread_state* ts, struct task_struct* t, __u64 now) {
  __u64 start = ts->offcpu_start_ns;
  __u64 seq = ts->seq;
  ts->offcpu_start_ns = 0;
  ts->seq = seq + 1; /* only this thread's switch-in writes it: one CPU at a time */
  __u64 off = now - start;
  if (off < wait_threshold_ns) return;
  struct hs_proc_stats* st = watched_proc(t->tgid);
  if (!st) return;
  __u32 slot = among_longest(st, off);
  if (slot == HS_SLOT_NOT_SENT) return;
  /* With the user stack the iterator copied of this very sleep, when it did; else the thread
   * copies it itself on its way back to user space, where the kernel can. */
  bool with_stack = ts->copied_seq == seq + 1;
  bool follows = !with_stack && copy_on_resume(t, seq);
  struct hs_wait* e = 0;
  if (with_stack) { /* two reservations of constant sizes: the verifier checks each */
    struct hs_wait_stack* full = reserve(sizeof(*full));
    if (!full) return;
    bpf_probe_read_kernel(&full->u, sizeof(full->u), &ts->copy);
    e = &full->w;
  } else {
    e = reserve(sizeof(*e));
    if (!e) return;
  }
  keep_wait(st, slot, off);
  fill_header(&e->h, with_stack ? HS_EV_WAIT_STACK : HS_EV_WAIT, t);
  e->syscall_nr = ts->syscall_nr;
  e->arg0 = ts->arg0;
  e->seq = seq;
  e->duration_ns = off;
  e->waker_pid = ts->waker_pid;
  e->waker_tid = ts->waker_tid;
  __builtin_memcpy(e->waker_comm, ts->waker_comm, HS_COMM_LEN);
  e->kstack_len = sleep_stack(t, e->kstack, sizeof(e->kstack));
  e->copy_follows = follows;
  submit(e);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct* prev, struct task_struct* next,
             unsigned int prev_state) {
  /* A sleep only if not preempted: a preemptible kernel can preempt a thread between setting
   * its sleeping state and calling schedule(); it stays runnable (prev_state is not 0 then). */
  struct thread_state* ts = prev_state != 0 && !preempt ? state_of(prev) : 0;
  struct thread_state* tn = state_of(next);
  if (tn && tn->offcpu_start_ns == 0) {
    if (tn->asleep_before) { /* the sleep that began before the recording ends */
      tn->asleep_before = 0;
      tn->seq += 1;
    }
    tn = 0; /* it was preempted (runnable): no sleep of it ends here */
  }
  /* The clock is read only where a sleep begins or ends: a switch between runnable threads
   * (a preemption, most switches of an oversubscribed job) reads none (docs/performance.md). */
  if (!ts && !tn) return 0;
  __u64 now = bpf_ktime_get_ns();
  if (ts) begin_sleep(ts, prev, now);
  if (tn) end_sleep(tn, next, now);
  return 0;
}

/* Why: a wake-up from an interrupt (a timer's expiry, a device's completion) or from the
 * kernel's softirq work (a packet received) runs on whatever task was on the CPU, and that task
 * woke nobody. The kernel's preempt count says where we are. It is a per-CPU variable, and
 * per-CPU data symbols are not in every kernel's kallsyms (KALLSYMS_ALL), so it is reached
 * from the current task's runqueue, another per-CPU variable: user space puts the distance
 * between the two (from the kernel's BTF, `preempt_count_from_rq`) here; 0: unknown. */
const volatile __s64 preempt_count_from_rq = 0;
#define HS_NMI_MASK 0x00f00000
#define HS_HARDIRQ_MASK 0x000f0000
#define HS_SOFTIRQ_OFFSET 0x00000100 /* set while softirqs are served */

/* 1: in a task's own context, 0: in an interrupt or softirq, -1: not known here. */
static __always_inline int in_task_context(void) {
  /* Both constant at load: where either fails, what follows is dead code to the verifier. */
  if (preempt_count_from_rq == 0 || !bpf_core_field_exists(struct sched_entity, cfs_rq)) return -1;
  /* The running task's runqueue is this CPU's (direct loads: BTF pointers, no helper). */
  struct rq* rq = bpf_get_current_task_btf()->se.cfs_rq->rq;
  int pc = 0;
  if (!rq || bpf_probe_read_kernel(&pc, sizeof(pc), (void*)rq + preempt_count_from_rq) != 0)
    return -1;
  return (pc & (HS_NMI_MASK | HS_HARDIRQ_MASK | HS_SOFTIRQ_OFFSET)) == 0;
}

/* `sched_waking`, not `sched_wakeup`: the latter runs on the wakee's CPU, in whatever task is
 * there, when the kernel hands the wake-up to an idle CPU or one that shares no cache with
 * the waker's (TTWU_QUEUE); sched_waking always runs in the waker's context. The last task to
 * wake the thread is kept; a wake-up from an interrupt clears it (the thread was woken by no
 * task: its timeout, a packet, a device). */
SEC("tp_btf/sched_waking")
int BPF_PROG(on_sched_waking, struct task_struct* p) {
  struct thread_state* ts = state_of(p);
  if (!ts || ts->offcpu_start_ns == 0) return 0;
  if (in_task_context() <= 0) {
    ts->waker_pid = 0;
    ts->waker_tid = 0;
    return 0;
  }
  __u64 id = bpf_get_current_pid_tgid();
  ts->waker_pid = id >> 32;
  ts->waker_tid = (__u32)id;
  bpf_get_current_comm(ts->waker_comm, sizeof(ts->waker_comm));
  return 0;
}

/* Progress for the watchdog: a socket send or receive of a watched thread moved bytes (any
 * call: send, sendto, sendmsg, sendmmsg, write and writev on a socket, and the receiving
 * ones). Only sockets pay: the tracepoints are in the socket layer. A peek moves nothing.
 * Written at most once a jiffy per thread, and per process only when that jiffy is new. */
#define HS_MSG_PEEK 2
static __always_inline void data_moved(int ret, int flags) {
  if (ret <= 0 || (flags & HS_MSG_PEEK)) return;
  struct task_struct* t = bpf_get_current_task_btf();
  struct thread_state* ts = state_of(t);
  if (!ts) return;
  __u64 j = bpf_jiffies64();
  if (ts->io_jiffies == j) return;
  ts->io_jiffies = j;
  struct hs_proc_stats* st = watched_proc(t->tgid);
  if (st && st->io_jiffies != j) st->io_jiffies = j;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(on_sock_send, struct sock* sk, int ret, int flags) {
  data_moved(ret, flags);
  return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(on_sock_recv, struct sock* sk, int ret, int flags) {
  data_moved(ret, flags);
  return 0;
}

/* New threads of a watched process get their state here; with follow_children a forked
 * process joins `watched` first. (Threads that existed before are joined by the iterator.) */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct* parent, struct task_struct* child) {
  __u32 child_tgid = child->tgid;
  if (follow_children && child_tgid != parent->tgid && watched_proc(parent->tgid)) {
    struct hs_proc_stats zero = {};
    bpf_map_update_elem(&watched, &child_tgid, &zero, BPF_NOEXIST);
  }
  if (watched_proc(child_tgid))
    bpf_task_storage_get(&thread_states, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct* p) {
  if (!watched_proc(BPF_CORE_READ(p, tgid))) return 0;
  if (copy_at_resume) { /* each thread's exit: its copy's entry goes (a pending copy with it) */
    __u32 tid = BPF_CORE_READ(p, pid);
    bpf_map_delete_elem(&resume_copies, &tid);
  }
  /* The last thread of the group: its exit code is the process's. */
  if (BPF_CORE_READ(p, signal, live.counter) != 0) return 0;
  struct hs_exit* e = reserve(sizeof(*e));
  if (!e) return 0;
  fill_header(&e->h, HS_EV_EXIT, p);
  e->exit_code = BPF_CORE_READ(p, exit_code);
  e->group_dead = 1;
  submit_now(e);
  return 0;
}

SEC("tp_btf/signal_generate")
int BPF_PROG(on_signal, int sig, struct kernel_siginfo* info, struct task_struct* task, int group,
             int result) {
  if (!watched_proc(BPF_CORE_READ(task, tgid))) return 0;
  struct hs_signal* e = reserve(sizeof(*e));
  if (!e) return 0;
  fill_header(&e->h, HS_EV_SIGNAL, bpf_get_current_task_btf());
  /* Generated in an interrupt (a timer's SIGALRM, a POSIX timer's signal): the task that was
   * on the CPU sent nothing. */
  if (in_task_context() == 0) {
    e->h.pid = 0;
    e->h.tid = 0;
    __builtin_memset(e->h.comm, 0, HS_COMM_LEN);
  }
  e->target_pid = BPF_CORE_READ(task, tgid);
  e->target_tid = BPF_CORE_READ(task, pid);
  e->sig = sig;
  e->result = result;
  /* As the tracepoint's own TP_STORE_SIGINFO: SEND_SIG_NOINFO (0) is SI_USER, SEND_SIG_PRIV (1,
   * a signal from the kernel itself, e.g. the OOM killer's SIGKILL) is SI_KERNEL; only other
   * values point at a siginfo. */
  if ((unsigned long)info == 0) e->code = 0;         /* SI_USER */
  else if ((unsigned long)info == 1) e->code = 0x80; /* SI_KERNEL */
  else e->code = BPF_CORE_READ(info, si_code);
  e->group = group;
  BPF_CORE_READ_STR_INTO(&e->target_comm, task, comm);
  submit_now(e);
  return 0;
}

/* A watched process replaced its program: what user space knew of its interpreter (where it
 * is, its version's layout) was the old image's, so it is dropped here, before any sample of
 * the new image could walk it, and each thread's remembered thread state with it. User space
 * locates the new image's interpreter, if any, when it reads this record. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct* p, pid_t old_pid, struct linux_binprm* bprm) {
  __u32 tgid = p->tgid;
  if (!watched_proc(tgid)) return 0;
  bpf_map_delete_elem(&py_procs, &tgid);
  struct thread_state* ts = state_of(p); /* exec leaves the process one thread: this one */
  if (ts) ts->py_tstate = 0;
  struct hs_exec* e = reserve(sizeof(*e));
  if (!e) return 0;
  fill_header(&e->h, HS_EV_EXEC, p);
  bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), BPF_CORE_READ(bprm, filename));
  submit_now(e);
  return 0;
}

/* Loaded only where mark_victim passes the task (Linux 6.2 and later; the loader checks). */
SEC("tp_btf/mark_victim")
int BPF_PROG(on_oom_victim, struct task_struct* task) {
  if (!watched_proc(BPF_CORE_READ(task, tgid))) return 0;
  struct hs_oom* e = reserve(sizeof(*e));
  if (!e) return 0;
  fill_header(&e->h, HS_EV_OOM, task);
  submit_now(e);
  return 0;
}
