/* The Python frames of one thread, walked in the kernel: included by hangscan_watch.bpf.c (at an
 * on-CPU sample or a sleep's end, the current task's own memory).
 *
 * Why in the kernel: CPython keeps its frame chain in heap memory that changes as the program
 * runs, so a chain read later would be the interpreter's state at that later read, attributed
 * to an old sample. The chain's raw pointers are copied (the code object and the
 * instruction pointer of each frame, which eval-loop call each frame starts); user space names
 * them afterwards (src/python: a code object does not change) and merges them with the native
 * frames as `dump --native` does. Where a process's interpreter is and how its version lays
 * frames out comes from user space (struct hs_py_proc, from src/python/layout.h through
 * src/capture/bpf_python.h). An unreadable frame ends the chain with its status, more than
 * HS_PY_FRAMES frames end it with HS_PY_CUT.
 */
#ifndef HANGSCAN_PY_FRAMES_BPF_H
#define HANGSCAN_PY_FRAMES_BPF_H

/* One read of the walked thread's memory: the current task's (`task` is it). */
#define py_read(dst, len, addr, task) bpf_probe_read_user(dst, len, (void*)(addr))

static __always_inline __u64 py_user_u64(struct task_struct* task, __u64 addr) {
  __u64 v = 0;
  if (py_read(&v, sizeof(v), addr, task) != 0) return 0;
  return v;
}

/* Fields of the frame bytes read into the scratch buffer; 0 for an offset outside them. */
static __always_inline __u64 py_field_u64(const __u8* b, __s32 off) {
  if (off < 0 || off > HS_PY_HEADER - 8) return 0;
  return *(const __u64*)(b + off);
}

static __always_inline __s32 py_field_s32(const __u8* b, __s32 off) {
  if (off < 0 || off > HS_PY_HEADER - 4) return 0;
  return *(const __s32*)(b + off);
}

static __always_inline __s8 py_field_s8(const __u8* b, __s32 off) {
  if (off < 0 || off > HS_PY_HEADER - 1) return 0;
  return *(const __s8*)(b + off);
}

/* Whether thread state `t` is the current thread's: its native id (3.11+), else its pthread_t,
 * which on x86-64 glibc is the thread's fs base. The native id is the thread's id in the
 * process's own pid namespace, which is not task->pid for a process in a container watched by
 * host pid (from the host, or a hostPID pod): the pthread_t is the same in every namespace. */
static __always_inline bool py_is_current(const struct hs_py_proc* c, struct task_struct* task,
                                          __u64 t, __u32 tid, __u64 fs_base) {
  if (c->tstate_native_thread_id >= 0 && py_user_u64(task, t + c->tstate_native_thread_id) == tid)
    return true;
  return c->tstate_thread_id >= 0 && fs_base != 0 &&
         py_user_u64(task, t + c->tstate_thread_id) == fs_base;
}

static __always_inline void py_mark_entry(struct hs_py_stack* out, __u32 i) {
  out->entries[(i >> 6) & (HS_PY_FRAMES / 64 - 1)] |= 1ULL << (i & 63);
}

/* The state of one walk, shared with the bpf_loop() steps below. Why bpf_loop: a loop of a
 * hundred frames, each with its branches, is too much for the verifier to unroll and check
 * path by path; a step function is checked once. */
struct py_walk {
  struct hs_py_stack* out;
  const struct hs_py_proc* c;
  struct task_struct* task; /* the walked thread */
  __u8* buf;
  __u64 at; /* the next thread state, _PyCFrame or frame */
  __u64 fs_base;
  __u64 found;
  __u32 tid;
  __u32 n;
  __u32 guessing; /* `at` is the caller's guess (0: none), not yet an entry of the list */
};

/* One thread state: the caller's guess first, then the interpreter's list from its head; stops
 * at the current thread's. Why the guess inside the loop: one path into the frame walk below,
 * which the verifier then checks once, not once with a guess and once without. */
static long py_thread_step(__u32 i, void* arg) {
  struct py_walk* w = arg;
  if (w->at != 0 && py_is_current(w->c, w->task, w->at, w->tid, w->fs_base)) {
    w->found = w->at;
    return 1;
  }
  if (w->guessing) {
    w->guessing = 0;
    __u64 interp = py_user_u64(w->task, w->c->interp_head_ptr);
    w->at = interp != 0 ? py_user_u64(w->task, interp + w->c->interp_threads_head) : 0;
    return 0;
  }
  if (w->at == 0) return 1;
  w->at = py_user_u64(w->task, w->at + w->c->tstate_next);
  return 0;
}

/* 3.11: one _PyCFrame of the thread's chain, one per eval-loop call (a local of that call, so
 * its address names the call's native frame); the root one (previous null) is not a call. */
static long py_cframe_step(__u32 i, void* arg) {
  struct py_walk* w = arg;
  if (w->at == 0) return 1;
  __u64 previous = py_user_u64(w->task, w->at + w->c->cframe_previous);
  if (previous == 0) return 1;
  w->out->calls[w->n & (HS_PY_CALLS - 1)] = w->at;
  w->n++;
  w->at = previous;
  return 0;
}

/* One frame, as src/python's walk reads it: C-stack shims (3.12+) are not kept but mark the
 * frame before them as the first of its eval-loop call. */
static long py_frame_step(__u32 i, void* arg) {
  struct py_walk* w = arg;
  const struct hs_py_proc* c = w->c;
  struct hs_py_stack* out = w->out;
  __u8* buf = w->buf;
  __u64 frame = w->at;
  __u32 n = w->n;
  if (frame == 0) return 1;
  if (n >= HS_PY_FRAMES) {
    out->status = HS_PY_CUT;
    return 1;
  }
  __u32 len = c->header_len;
  if (len == 0 || len > HS_PY_HEADER || py_read(buf, len, frame, w->task) != 0) {
    out->status = HS_PY_UNREADABLE;
    return 1;
  }
  w->at = py_field_u64(buf, c->frame_previous);
  __u64 code = py_field_u64(buf, c->frame_code);
  if (c->flags & HS_PY_STACKREF) code &= ~3ULL;
  if (c->shim_owner >= 0) {
    __s8 owner = py_field_s8(buf, c->frame_owner);
    if (owner >= c->shim_owner) {
      /* Not Python code: the boundary of one eval-loop call, on that call's C stack. */
      if (owner == c->shim_owner && n > 0) {
        py_mark_entry(out, n - 1);
        out->f[(n - 1) & (HS_PY_FRAMES - 1)].marker = frame;
      }
      return 0;
    }
  }
  if (code == 0) return 0;
  struct hs_py_frame* f = &out->f[n & (HS_PY_FRAMES - 1)];
  f->code = code;
  f->marker = 0;
  if (c->flags & HS_PY_FRAME_OBJECT) {
    f->instr = (__u64)(__s64)py_field_s32(buf, c->frame_instr);
    py_mark_entry(out, n); /* each PyFrameObject runs in its own eval-loop call */
  } else {
    f->instr = py_field_u64(buf, c->frame_instr);
    if (c->frame_is_entry >= 0 && py_field_s8(buf, c->frame_is_entry) != 0) py_mark_entry(out, n);
  }
  w->n = n + 1;
  return 0;
}

/* The Python frames of thread `task` into `out` (status HS_PY_NO_THREAD when Python does not
 * know this thread). Its thread state: `*cached` when that is still this thread's (a thread
 * state lives as long as its thread; the recorder remembers it per thread), else by a walk of
 * the first interpreter's list (then kept in `*cached`). `cached` may be null. `buf`:
 * HS_PY_HEADER bytes nothing else writes during the walk. */
static __always_inline void py_walk_thread(struct hs_py_stack* out, const struct hs_py_proc* c,
                                           struct task_struct* task, __u64 fs_base, __u8* buf,
                                           __u64* cached) {
  out->status = HS_PY_NO_THREAD;
  out->nframes = 0;
  out->ncalls = 0;
  for (int i = 0; i < HS_PY_FRAMES / 64; i++) out->entries[i] = 0;
  struct py_walk w = {.out = out,
                      .c = c,
                      .task = task,
                      .buf = buf,
                      .fs_base = fs_base,
                      .tid = task->pid,
                      .guessing = 1};
  if (cached) w.at = *cached;
  bpf_loop(HS_PY_THREADS + 1, py_thread_step, &w, 0); /* + 1: the guess */
  if (w.found == 0) return;
  if (cached) *cached = w.found;
  __u64 frame = py_user_u64(task, w.found + c->tstate_frame);
  if (c->cframe_current_frame >= 0 && frame != 0) {
    if (c->cframe_previous >= 0) {
      w.at = frame;
      w.n = 0;
      bpf_loop(HS_PY_CALLS, py_cframe_step, &w, 0);
      out->ncalls = w.n;
    }
    frame = py_user_u64(task, frame + c->cframe_current_frame);
  }
  out->status = HS_PY_OK;
  w.at = frame;
  w.n = 0;
  /* Twice the frames: C-stack shims (3.12+) are walked but not kept. */
  bpf_loop(2 * HS_PY_FRAMES, py_frame_step, &w, 0);
  if (w.at != 0 && out->status == HS_PY_OK) out->status = HS_PY_CUT;
  out->nframes = w.n;
}

#endif
