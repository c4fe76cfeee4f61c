/* How a wait gets its user stack (included by hangscan_watch.bpf.c; docs/watch.md, "The user
 * stack of a wait").
 *
 * Why here, apart from the scheduler programs: the wait's end (sched_switch) runs in the
 * context of the task switching out and cannot read the waiting thread's memory. Two ways
 * around that, one per kernel age: on Linux 6.18+ the thread copies its own stack on its way
 * back to user space (a BPF task work asked for at the wait's end: copy_on_resume,
 * copy_own_stack); before, a sleepable task iterator that user space runs every 100 ms copies
 * the stacks of long sleeps while they last (copy_wait_stacks). The iterator also gives threads
 * that existed before the watch their state, and copies sleeps going on at the end of a window.
 */
#ifndef HANGSCAN_WAIT_STACKS_BPF_H
#define HANGSCAN_WAIT_STACKS_BPF_H

/* The state of one thread's copy of its own stack on its way back to user space (key: tid). */
struct resume_copy {
  struct bpf_task_work tw;
  __u64 first_seq, last_seq; /* the waits (their seq) the copy is for */
  __u64 ip, sp, orig_ax;     /* the user registers they slept with */
  __u64 pending;             /* scheduled and not run yet */
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 65536);
  __type(key, __u32);
  __type(value, struct resume_copy);
} resume_copies SEC(".maps");

extern int bpf_task_work_schedule_resume_impl(struct task_struct* task, struct bpf_task_work* tw,
                                              void* map__map,
                                              int (*callback)(struct bpf_map*, void*, void*),
                                              void* aux__prog) __ksym __weak;

/* Runs in the thread itself, after its waits ended and before it runs any user code again (a
 * task work on its way back to user space: queued by an interrupt work that fires as soon as
 * the switch-in that ended the wait enables interrupts), so its user registers and stack are
 * still those it slept with: they are checked against those kept at the end of the wait
 * (instruction and stack pointers, system call), and copied, with its Python frames for a
 * Python process. Sent after the waits' records, which say a copy follows. */
static int copy_own_stack(struct bpf_map* map, void* key, void* value) {
  struct resume_copy* rc = value;
  struct task_struct* t = bpf_get_current_task_btf();
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(t);
  bool same = t->pid == *(__u32*)key && regs->ip == rc->ip && regs->sp == rc->sp &&
              regs->orig_ax == rc->orig_ax;
  __u32 tgid = t->tgid;
  struct hs_py_proc* py = same ? bpf_map_lookup_elem(&py_procs, &tgid) : 0;
  struct thread_state* ts = py ? state_of(t) : 0;
  struct hs_wait_copy* e = 0;
  struct hs_wait_copy_py* ep = 0;
  if (py && ts) { /* two reservations of constant sizes: the verifier checks each */
    ep = reserve(sizeof(*ep));
    e = ep ? &ep->c : 0;
  } else {
    e = reserve(sizeof(*e));
  }
  if (e) {
    fill_header(&e->h, ep ? HS_EV_WAIT_COPY_PY : HS_EV_WAIT_COPY, t);
    e->stale = !same;
    e->pad = 0;
    e->u.stack_len = 0;
    if (same) copy_user_stack(&e->u, t);
    e->u.kstack_len = 0;
    if (ep && py && ts)
      py_walk_thread(&ep->py, py, t, e->u.fs_base, ts->py_scratch, &ts->py_tstate);
    count(same ? HS_CNT_RESUME_COPIES : HS_CNT_RESUME_STALE);
    e->first_seq = rc->first_seq;
    e->last_seq = rc->last_seq;
  }
  rc->pending = 0;
  if (e) submit(e);
  return 0;
}

/* Asks thread `t`, whose wait `seq` ended and is sent without a copy, to copy its own stack on
 * its way back to user space; true when that copy will follow. A copy already asked for and not
 * made yet covers this wait too: the thread has not been back in user space since (the same
 * system call: the same user stack). Only the thread's own switch-ins and task work touch its
 * entry, one at a time. */
static __always_inline bool copy_on_resume(struct task_struct* t, __u64 seq) {
  if (!copy_at_resume) return false; /* constant at load: dead code where the kernel lacks it */
  __u32 tid = t->pid;
  struct resume_copy* rc = bpf_map_lookup_elem(&resume_copies, &tid);
  if (!rc) {
    struct resume_copy zero = {};
    bpf_map_update_elem(&resume_copies, &tid, &zero, BPF_NOEXIST);
    rc = bpf_map_lookup_elem(&resume_copies, &tid);
    if (!rc) return false;
  }
  if (rc->pending) {
    rc->last_seq = seq;
    return true;
  }
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(t);
  rc->first_seq = seq;
  rc->last_seq = seq;
  rc->ip = regs->ip;
  rc->sp = regs->sp;
  rc->orig_ax = regs->orig_ax;
  rc->pending = 1;
  if (bpf_task_work_schedule_resume_impl(t, &rc->tw, &resume_copies, copy_own_stack, 0) == 0)
    return true;
  rc->pending = 0;
  return false;
}

/* Registers and the top of the user stack of a thread that is off CPU, into its own state
 * (sleepable: another task's memory). */
static __always_inline void copy_sleeping(struct thread_state* ts, struct task_struct* t) {
  count(HS_CNT_WAIT_COPIES);
  struct hs_user_stack* c = &ts->copy;
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(t);
  bpf_probe_read_kernel(&c->regs, sizeof(c->regs), regs);
  c->fs_base = t->thread.fsbase;
  c->kstack_len = 0;
  c->stack_len = copy_stack(c->stack, c->regs.sp, t, true);
}

/* Off CPU and not runnable (volatile: read again at each call). */
static __always_inline bool asleep(struct task_struct* t) {
  return *(volatile int*)&t->on_cpu == 0 && *(volatile unsigned int*)&t->__state != 0;
}

/* A thread asleep since before it had a state (the recorder saw no start of this sleep): its
 * user stack, copied once, is where it has waited since before the recording began (user space
 * reports such a wait from /proc with this stack). The flag is set first, with a full barrier:
 * a switch-in after it voids the copy (seq moves on); one before it leaves the task running,
 * which the check after the barrier sees. */
static __always_inline void copy_asleep_before(struct thread_state* ts, struct task_struct* t,
                                               __u64 seq) {
  if (!asleep(t)) return; /* running or runnable: most passes end here, with no write */
  __sync_fetch_and_or(&ts->asleep_before, 1);
  if (!asleep(t)) return;
  ts->copied_seq = 0;
  copy_sleeping(ts, t);
  if (*(volatile __u64*)&ts->seq != seq || *(volatile __u64*)&ts->offcpu_start_ns != 0) {
    count(HS_CNT_STALE_COPIES);
    return;
  }
  ts->copied_seq = seq + 1;
}

/* Run by user space over every task when a process is watched, at the end of a window, and
 * every 100 ms where threads do not copy their own stacks (copy_at_resume 0):
 * a thread of a watched process without a state gets one; a thread asleep in a wait at least
 * wait_threshold_ns old and within copy_margin_ns of its process's shortest kept wait (so it
 * may be sent when it ends) and not copied yet has its registers and the top of its user stack
 * copied into its state (sleepable: the copy reads another task's memory). The copy is marked
 * valid (copied_seq) only if the thread did not run meanwhile (its seq and sleep start
 * unchanged after the copy): the stack is then exactly the sleeping one's, and end_sleep sends
 * it with the wait if the wait is sent. A thread asleep since before it had a state is copied
 * once (copy_asleep_before). */
SEC("iter.s/task")
int copy_wait_stacks(struct bpf_iter__task* ctx) {
  struct task_struct* t = ctx->task;
  if (!t) return 0;
  struct thread_state* ts = state_of(t);
  struct hs_proc_stats* st = watched_proc(t->tgid);
  if (!st) return 0;
  if (!ts) ts = bpf_task_storage_get(&thread_states, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!ts) return 0;
  __u64 start = ts->offcpu_start_ns;
  __u64 seq = ts->seq;
  if (ts->copied_seq == seq + 1) return 0;
  if (start == 0) {
    copy_asleep_before(ts, t, seq);
    return 0;
  }
  __u64 age = bpf_ktime_get_ns() - start;
  __u32 at = 0;
  if (age < wait_threshold_ns) return 0;
  if (top_waits != 0 && top_waits <= HS_TOP_WAITS_MAX &&
      age + copy_margin_ns <= shortest_kept(st, &at))
    return 0;
  /* Into the thread's own state; valid only once copied_seq says so (below). */
  ts->copied_seq = 0;
  copy_sleeping(ts, t);
  /* Read again after the copy (volatile: not the values loaded before it). */
  if (*(volatile __u64*)&ts->seq != seq || *(volatile __u64*)&ts->offcpu_start_ns != start) {
    count(HS_CNT_STALE_COPIES);
    return 0;
  }
  ts->copied_seq = seq + 1;
  return 0;
}

#endif
