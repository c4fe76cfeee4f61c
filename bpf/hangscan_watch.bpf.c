// SPDX-License-Identifier: GPL-2.0
/* hangscan's recorder: what the watched processes do over time (docs/watch.md).
 *
 * Why these programs: on-CPU samples say where each rank spends its CPU; system calls that
 * take long, with the time the thread was off CPU inside them and who woke it, say where it
 * waits; exits, signals and OOM victims say how a rank ended. Every record carries what user
 * space needs to finish it later (registers and the top of the user stack for an unwind with
 * libdw): nothing is unwound here, since Debian's python and libc have no frame pointers.
 * Only processes in `watched` are recorded; their children join when `follow_children` is set.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "watch_events.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load (the skeleton's rodata). */
const volatile __u64 wait_threshold_ns = 10000000; /* a system call this long becomes an event */
const volatile __u64 offcpu_threshold_ns = 10000000;
const volatile __u8 follow_children = 0;
/* The longest waits the report keeps per process (0, or above HS_TOP_WAITS_MAX: send all). */
const volatile __u32 top_waits = 5;
/* The reader is woken when this much is waiting in the ring; it also drains every 100 ms. */
#define WAKE_AT_BYTES (2 << 20)

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32); /* tgid */
  __type(value, struct hs_proc_stats);
} watched SEC(".maps");

#define thread_state hs_thread_state

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32); /* tid */
  __type(value, struct thread_state);
} threads SEC(".maps");

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

/* One zeroed thread_state to insert from (too large for the BPF stack). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct thread_state);
} scratch SEC(".maps");

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
static __always_inline bool among_longest(struct hs_proc_stats* st, __u64 dur) {
  __sync_fetch_and_add(&st->waits, 1);
  if (top_waits == 0 || top_waits > HS_TOP_WAITS_MAX) return true;
  __u32 min_i = 0;
  __u64 min_v = ~0ULL;
  for (__u32 i = 0; i < HS_TOP_WAITS_MAX && i < top_waits; i++) {
    __u64 v = st->top_wait_ns[i];
    if (v < min_v) {
      min_v = v;
      min_i = i;
    }
  }
  if (dur <= min_v) {
    __sync_fetch_and_add(&st->waits_not_sent, 1);
    return false;
  }
  st->top_wait_ns[min_i & (HS_TOP_WAITS_MAX - 1)] = dur;
  return true;
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

/* Registers and the top of the user stack of the current task, for an unwind in user space. */
static __always_inline void copy_user_stack(struct hs_user_stack* u, struct task_struct* task) {
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(task);
  bpf_probe_read_kernel(&u->regs, sizeof(u->regs), regs);
  u->fs_base = BPF_CORE_READ(task, thread.fsbase);
  u->stack_len = 0;
  __u64 sp = u->regs.sp;
  for (int i = 0; i < HS_STACK_CHUNKS; i++) {
    if (bpf_probe_read_user(&u->stack[i * HS_STACK_CHUNK], HS_STACK_CHUNK,
                            (void*)(sp + (__u64)i * HS_STACK_CHUNK)) != 0) {
      if (i == 0) count(HS_CNT_STACK_FAULTS);
      break;
    }
    u->stack_len += HS_STACK_CHUNK;
  }
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  struct hs_proc_stats* st = watched_proc(id >> 32);
  if (!st) return 0;
  __sync_fetch_and_add(&st->samples, 1);
  struct hs_sample* e = reserve(sizeof(*e));
  if (!e) return 0;
  struct task_struct* task = bpf_get_current_task_btf();
  fill_header(&e->h, HS_EV_SAMPLE, task);
  /* The context allows whole-register loads only: a volatile 8-byte read of cs. */
  __u64 cs = *(volatile __u64*)&ctx->regs.cs;
  e->in_kernel = (cs & 3) == 0;
  copy_user_stack(&e->u, task);
  e->syscall_nr = e->in_kernel && in_syscall(&e->u.regs) ? (__s32)e->u.regs.orig_ax : -1;
  long n = e->in_kernel ? bpf_get_stack(ctx, e->u.kstack, sizeof(e->u.kstack), 0) : 0;
  e->u.kstack_len = n > 0 ? n : 0;
  submit(e);
  return 0;
}

static __always_inline struct thread_state* thread_of(__u32 tid, bool create) {
  struct thread_state* ts = bpf_map_lookup_elem(&threads, &tid);
  if (ts || !create) return ts;
  __u32 zero = 0;
  struct thread_state* init = bpf_map_lookup_elem(&scratch, &zero);
  if (!init) return 0;
  init->syscall_nr = -1;
  init->tgid = bpf_get_current_pid_tgid() >> 32;
  bpf_map_update_elem(&threads, &tid, init, BPF_NOEXIST);
  return bpf_map_lookup_elem(&threads, &tid);
}

/* read, write, readv, writev, pread64, pwrite64, sendto, recvfrom, sendmsg, recvmsg, sendfile,
 * preadv, pwritev, recvmmsg, sendmmsg, copy_file_range, splice (x86-64 numbers): a return
 * above 0 moved data, which is progress (docs/watch.md, "Stall"). */
static __always_inline bool moves_data(long nr) {
  switch (nr) {
    case 0:
    case 1:
    case 17:
    case 18:
    case 19:
    case 20:
    case 40:
    case 44:
    case 45:
    case 46:
    case 47:
    case 275:
    case 295:
    case 296:
    case 299:
    case 307:
    case 326:
      return true;
  }
  return false;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs* regs, long ret) {
  __u64 id = bpf_get_current_pid_tgid();
  struct hs_proc_stats* st = watched_proc(id >> 32);
  if (!st) return 0;
  /* Progress: the last jiffy a data call moved bytes. Written at most once a jiffy, so the
   * ranks' CPUs do not fight over the line on every call (an atomic count did). */
  if (ret > 0 && moves_data(regs->orig_ax)) {
    __u64 j = bpf_jiffies64();
    if (st->io_jiffies != j) st->io_jiffies = j;
  }
  /* Only a call that left the CPU to wait has a state (sched_switch began it). */
  struct thread_state* ts = thread_of((__u32)id, false);
  if (!ts || ts->syscall_nr < 0) return 0;
  __u64 now = bpf_ktime_get_ns();
  __u64 dur = now - ts->sys_start_ns;
  if (dur >= wait_threshold_ns && among_longest(st, dur)) {
    struct hs_wait* e = reserve(sizeof(*e));
    if (e) {
      struct task_struct* task = bpf_get_current_task_btf();
      fill_header(&e->h, HS_EV_WAIT, task);
      e->syscall_nr = ts->syscall_nr;
      e->arg0 = ts->arg0;
      e->ret = ret;
      e->duration_ns = dur;
      e->offcpu_ns = ts->offcpu_ns;
      e->waker_pid = ts->waker_pid;
      e->waker_tid = ts->waker_tid;
      __builtin_memcpy(e->waker_comm, ts->waker_comm, HS_COMM_LEN);
      copy_user_stack(&e->u, task);
      __u32 klen = ts->kstack_len;
      if (klen > sizeof(e->u.kstack)) klen = sizeof(e->u.kstack);
      bpf_probe_read_kernel(e->u.kstack, sizeof(e->u.kstack), ts->kstack);
      e->u.kstack_len = klen;
      submit(e);
    }
  }
  ts->syscall_nr = -1;
  return 0;
}

/* A thread leaves the CPU for the first time in a system call: the wait starts now (the call's
 * few microseconds on CPU before are not waiting), with the call's number and first argument
 * from the registers it entered with. Not in a system call (a page fault): nothing here. */
static __always_inline void begin_wait(struct thread_state* ts, struct task_struct* t, __u64 now) {
  struct pt_regs* r = (struct pt_regs*)bpf_task_pt_regs(t);
  __s64 nr = r->orig_ax;
  if (nr < 0 || (__s64)r->ax != -HS_ENOSYS) return; /* as in_syscall() */
  ts->syscall_nr = nr;
  ts->arg0 = r->di;
  ts->sys_start_ns = now;
  ts->offcpu_ns = 0;
  ts->waker_pid = 0;
  ts->waker_tid = 0;
  ts->kstack_len = 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_sched_switch, bool preempt, struct task_struct* prev, struct task_struct* next,
             unsigned int prev_state) {
  __u64 now = bpf_ktime_get_ns();
  __u32 prev_tgid = prev->tgid;
  /* A thread that leaves the CPU to wait (not preempted): when, and, the first time in a system
   * call, which call (a wait begins). Its kernel stack is taken when it runs again, and only if
   * the wait was long (below). */
  if (prev_state != 0 && watched_proc(prev_tgid)) {
    struct thread_state* ts = thread_of(prev->pid, true);
    if (ts) {
      ts->offcpu_start_ns = now;
      if (ts->syscall_nr < 0) begin_wait(ts, prev, now);
    }
  }
  __u32 next_tgid = next->tgid;
  struct hs_proc_stats* st = watched_proc(next_tgid);
  if (!st) return 0;
  struct thread_state* ts = thread_of(next->pid, false);
  if (!ts || ts->offcpu_start_ns == 0) return 0;
  __u64 off = now - ts->offcpu_start_ns;
  ts->offcpu_start_ns = 0;
  if (ts->syscall_nr >= 0) {
    ts->offcpu_ns += off; /* reported with the system call, at its return */
    /* Where it slept, once the call is long enough to be a wait (the last such sleep wins). */
    if (now - ts->sys_start_ns >= wait_threshold_ns)
      ts->kstack_len = sleep_stack(next, ts->kstack, sizeof(ts->kstack));
    return 0;
  }
  if (off < offcpu_threshold_ns || !among_longest(st, off)) return 0;
  struct hs_offcpu* e = reserve(sizeof(*e));
  if (!e) return 0;
  fill_header(&e->h, HS_EV_OFFCPU, next);
  e->duration_ns = off;
  e->waker_pid = ts->waker_pid;
  e->waker_tid = ts->waker_tid;
  __builtin_memcpy(e->waker_comm, ts->waker_comm, HS_COMM_LEN);
  e->kstack_len = sleep_stack(next, e->kstack, sizeof(e->kstack));
  submit(e);
  return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_sched_wakeup, struct task_struct* p) {
  if (!watched_proc(p->tgid)) return 0;
  struct thread_state* ts = thread_of(p->pid, false);
  if (!ts || ts->offcpu_start_ns == 0) return 0;
  __u64 id = bpf_get_current_pid_tgid();
  ts->waker_pid = id >> 32;
  ts->waker_tid = (__u32)id;
  bpf_get_current_comm(ts->waker_comm, sizeof(ts->waker_comm));
  return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct* parent, struct task_struct* child) {
  if (!follow_children) return 0;
  if (!watched_proc(BPF_CORE_READ(parent, tgid))) return 0;
  __u32 child_tgid = BPF_CORE_READ(child, tgid);
  struct hs_proc_stats zero = {};
  bpf_map_update_elem(&watched, &child_tgid, &zero, BPF_NOEXIST);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct* p) {
  __u32 tid = BPF_CORE_READ(p, pid);
  bpf_map_delete_elem(&threads, &tid);
  if (!watched_proc(BPF_CORE_READ(p, tgid))) return 0;
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
