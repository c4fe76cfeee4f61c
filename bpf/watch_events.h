/* Records the recorder (hangscan_watch.bpf.c) sends to user space (src/watch/).
 *
 * Why one header for both sides: the BPF program writes these structs into the ring buffer
 * and src/watch/ reads them back byte for byte; one definition keeps the layouts equal. Plain C
 * with fixed-width types only, so it compiles with clang -target bpf and with g++.
 */
#ifndef HANGSCAN_WATCH_EVENTS_H
#define HANGSCAN_WATCH_EVENTS_H

#ifndef __VMLINUX_H__
#include <stdint.h>
typedef uint8_t hs_u8;
typedef uint32_t hs_u32;
typedef int32_t hs_s32;
typedef uint64_t hs_u64;
typedef int64_t hs_s64;
#else
typedef __u8 hs_u8;
typedef __u32 hs_u32;
typedef __s32 hs_s32;
typedef __u64 hs_u64;
typedef __s64 hs_s64;
#endif

#define HS_COMM_LEN 16
/* User stack bytes copied per sample or wait: the top 16 KiB holds ~11 frames of Debian's
 * python3.11 (see docs/watch.md); copied in 4-KiB reads, and where one fails, up to the page
 * boundary inside it, so a stack whose mapping ends sooner yields every byte below its end. */
#define HS_STACK_CHUNK 512
#define HS_STACK_CHUNKS 32
#define HS_STACK_PAGE 4096
#define HS_STACK_BYTES (HS_STACK_CHUNK * HS_STACK_CHUNKS)
#define HS_KSTACK_DEPTH 24

enum hs_event_kind {
  HS_EV_SAMPLE = 1,        /* an on-CPU sample (perf_event cpu-clock) */
  HS_EV_WAIT = 2,          /* a sleep of at least wait_threshold_ns, when the thread ran again */
  HS_EV_EXIT = 4,          /* a thread group leader exited (sched_process_exit) */
  HS_EV_SIGNAL = 5,        /* a signal was generated for a watched process (signal_generate) */
  HS_EV_OOM = 6,           /* the OOM killer chose a watched process (oom:mark_victim) */
  HS_EV_WAIT_STACK = 7,    /* HS_EV_WAIT with the user stack the iterator copied while it slept */
  HS_EV_SAMPLE_PY = 8,     /* HS_EV_SAMPLE of a Python process, with its Python frames */
  HS_EV_EXEC = 9,          /* a watched process replaced its program (sched_process_exec) */
  HS_EV_WAIT_COPY = 10,    /* the user stack of waits that just ended, copied on the way back to
                              user space (bpf_task_work), for HS_EV_WAIT records with copy_follows */
  HS_EV_WAIT_COPY_PY = 11, /* HS_EV_WAIT_COPY of a Python process, with its Python frames */
};

struct hs_header {
  hs_u32 kind;
  hs_u32 pid; /* tgid */
  hs_u32 tid;
  hs_u32 cpu;
  hs_u64 ts_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
  char comm[HS_COMM_LEN];
};

/* x86-64 user registers in struct pt_regs order (the kernel's, not user_regs_struct's). */
struct hs_regs {
  hs_u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs, flags,
      sp, ss;
};

struct hs_user_stack {
  struct hs_regs regs;
  hs_u64 fs_base;
  hs_u32 stack_len;  /* bytes of stack valid from regs.sp */
  hs_u32 kstack_len; /* bytes of kstack valid */
  hs_u64 kstack[HS_KSTACK_DEPTH];
  hs_u8 stack[HS_STACK_BYTES];
};

struct hs_sample {
  struct hs_header h;
  hs_u32 in_kernel;  /* the sample interrupted kernel code (a system call, a fault) */
  hs_s32 syscall_nr; /* the system call the thread is in, -1 if none */
  struct hs_user_stack u;
};

/* Python: where a watched CPython process keeps its interpreter and how its frames are laid
 * out (the `py_procs` map, filled by user space from its PyLayout: src/python/layout.h). Why in
 * the kernel: a frame chain read after the sample would be the interpreter's state at the read,
 * not at the sample; the sample copies the chain's raw pointers (code object, instruction
 * pointer) and user space names them later (code objects do not change). Offsets are bytes,
 * -1 where the version has no such field. */
#define HS_PY_FRAMES 128 /* a power of two */
#define HS_PY_CALLS 128
#define HS_PY_THREADS 256    /* thread states looked at to find the sampled thread's */
#define HS_PY_HEADER 128     /* bytes of a frame read at once (every field used lies in them) */
#define HS_PY_FRAME_OBJECT 1 /* 3.6-3.10: PyFrameObject, int f_lasti, each frame an eval call */
#define HS_PY_STACKREF 2     /* 3.14: the code pointer's low two bits are tags */
struct hs_py_proc {
  hs_u64 interp_head_ptr; /* address of the pointer to the first interpreter */
  hs_s32 interp_threads_head, tstate_next, tstate_frame, tstate_thread_id, tstate_native_thread_id;
  hs_s32 cframe_current_frame, cframe_previous; /* 3.11 (cframe_previous: -1 elsewhere) */
  hs_s32 frame_previous, frame_code, frame_instr, frame_owner, frame_is_entry;
  hs_s32 shim_owner; /* 3.12+: frames owned by the C stack (or above) are eval-call boundaries */
  hs_u32 header_len; /* bytes of a frame that hold every field above (<= HS_PY_HEADER) */
  hs_u32 flags;      /* HS_PY_FRAME_OBJECT, HS_PY_STACKREF */
};

enum hs_py_status {
  HS_PY_OK = 1,
  HS_PY_NO_THREAD = 2,  /* no thread state of the interpreter is this thread's */
  HS_PY_UNREADABLE = 3, /* a frame could not be read: the chain is cut there */
  HS_PY_CUT = 4,        /* more than HS_PY_FRAMES frames: the outer ones are missing */
};

struct hs_py_frame {
  hs_u64 code;   /* PyCodeObject* */
  hs_u64 instr;  /* the instruction pointer (3.11+), or f_lasti's bits (3.6-3.10) */
  hs_u64 marker; /* on an entry frame (3.12+): the C-stack shim's address (python/merge.h) */
};

struct hs_py_stack {
  hs_u32 status;                     /* enum hs_py_status */
  hs_u32 nframes;                    /* frames in f, innermost first */
  hs_u64 entries[HS_PY_FRAMES / 64]; /* bit i: frame i is the first of an eval-loop call */
  hs_u32 ncalls; /* 3.11: the thread's _PyCFrame chain (one per eval-loop call), innermost first */
  hs_u32 pad;
  hs_u64 calls[HS_PY_CALLS];
  struct hs_py_frame f[HS_PY_FRAMES];
};

/* A sample of a Python process: its thread's Python frames at the same instant. */
struct hs_sample_py {
  struct hs_sample s;
  struct hs_py_stack py;
};

/* One sleep of a watched thread (off CPU, not preempted) of at least wait_threshold_ns, sent
 * when the thread runs again (as HS_EV_WAIT_STACK with its user stack when the iterator copied
 * one of this very sleep, `seq`; else, with copy_follows, an HS_EV_WAIT_COPY comes later). */
struct hs_wait {
  struct hs_header h; /* ts_ns: when it ran again */
  hs_s64 syscall_nr;  /* the system call it slept in, -1: none (a page fault, ...) */
  hs_u64 arg0;        /* the fd for fd-taking calls */
  hs_u64 seq;
  hs_u64 duration_ns;
  hs_u32 waker_pid, waker_tid;
  char waker_comm[HS_COMM_LEN];
  hs_u32 kstack_len;
  hs_u32 copy_follows; /* 1: its user stack comes in an HS_EV_WAIT_COPY (tid, seq in range) */
  hs_u64 kstack[HS_KSTACK_DEPTH]; /* where it slept */
};

/* A wait with the registers and top of the user stack the sleepable task iterator
 * (copy_wait_stacks) copied while the thread still slept in it (u.kstack unused: w.kstack). */
struct hs_wait_stack {
  struct hs_wait w;
  struct hs_user_stack u;
};

/* The registers and top of the user stack of a thread whose waits `first_seq`..`last_seq` just
 * ended, copied by the thread itself before it ran any user code again (a task work run on its
 * way back to user space: the user stack is still the one it slept on). Sent after those waits'
 * HS_EV_WAIT records; `stale` (no copy): its user registers were not those it slept with. */
struct hs_wait_copy {
  struct hs_header h;
  hs_u64 first_seq, last_seq;
  hs_u32 stale;
  hs_u32 pad;
  struct hs_user_stack u; /* u.kstack unused: the waits' own */
};

/* HS_EV_WAIT_COPY of a Python process: the thread's Python frames, read at the same moment. */
struct hs_wait_copy_py {
  struct hs_wait_copy c;
  struct hs_py_stack py;
};

struct hs_exit {
  struct hs_header h;
  hs_u32 exit_code; /* task->exit_code: status << 8, or the signal number (| 0x80 for a core) */
  hs_u32 group_dead;
};

struct hs_signal {
  struct hs_header h; /* pid/tid/comm: the sender (current) */
  hs_u32 target_pid, target_tid;
  hs_s32 sig;
  hs_s32 result; /* TRACE_SIGNAL_* : 0 delivered, 1 ignored, 2 already pending, ... */
  hs_s32 code;   /* si_code: SI_USER 0, SI_KERNEL 0x80, SI_TKILL -6, ... */
  hs_u32 group;
  char target_comm[HS_COMM_LEN];
};

struct hs_oom {
  struct hs_header h; /* pid/tid/comm: the victim */
};

#define HS_PATH_LEN 256
struct hs_exec {
  struct hs_header h;         /* comm: the new program's */
  char filename[HS_PATH_LEN]; /* as exec was given it (bprm->filename), cut at HS_PATH_LEN */
};

/* Per thread state (the `thread_state` task storage, created for each thread of a watched
 * process): its current sleep. User space reads it (by pidfd) at the end of a window for the
 * waits still going on. */
struct hs_thread_state {
  hs_u64 seq;             /* sleeps ended (incremented when the thread runs again) */
  hs_u64 offcpu_start_ns; /* 0: on CPU (or preempted: runnable, not waiting) */
  hs_s64 syscall_nr;      /* the system call of the current sleep, -1: none */
  hs_u64 arg0;
  hs_u32 waker_pid, waker_tid;
  char waker_comm[HS_COMM_LEN];
  hs_u64 copied_seq; /* seq + 1 of the sleep whose user stack `copy` holds, 0: none */
  hs_u64 io_jiffies; /* the last jiffy a data call of this thread moved bytes */
  hs_u64 py_tstate;  /* this thread's Python thread state, as last found (checked at each use) */
  /* Non-zero: the thread was asleep when the iterator met it without a sleep start (asleep since
   * before its state existed, so before the recording); its next switch-in clears it and moves
   * seq on, which voids a copy of that sleep. */
  hs_u64 asleep_before;
  /* Its user registers and stack, copied by the iterator while it slept: sent with the wait
   * only if the wait is sent, so copies of waits that are not cost no record. */
  struct hs_user_stack copy;
  /* The Python walk's buffer when the thread copies its own stack (HS_EV_WAIT_COPY_PY): it may
   * be preempted there, so not a per-CPU one. */
  hs_u8 py_scratch[HS_PY_HEADER];
};

/* The longest waits kept per process: the report shows the `top_waits` longest (5 by default), so
 * the recorder sends a wait only when it is longer than one of those it already sent. */
#define HS_TOP_WAITS_MAX 8

/* Per watched process counters (the `watched` map's value), read by user space each second. */
struct hs_proc_stats {
  hs_u64 samples;    /* on-CPU samples taken */
  hs_u64 io_jiffies; /* when a socket send or receive last moved bytes (jiffies) */
  /* Durations of the longest waits sent so far (0: a free slot); a wait no longer than all of
   * them is counted in `waits_not_sent` instead of being sent (it would not be reported). */
  hs_u64 top_wait_ns[HS_TOP_WAITS_MAX];
  hs_u64 waits;          /* waits seen (system calls and off-CPU intervals over the threshold) */
  hs_u64 waits_not_sent; /* of those, shorter than every kept one: counted only */
};

/* Global counters (per CPU, summed by user space). */
enum hs_counter {
  HS_CNT_EVENTS = 0,
  HS_CNT_LOST = 1,
  HS_CNT_STACK_FAULTS = 2,
  HS_CNT_STALE_COPIES = 3,  /* wait stack copies voided: the thread ran during the copy */
  HS_CNT_WAIT_COPIES = 4,   /* wait stack copies made by the iterator (what it costs) */
  HS_CNT_RESUME_COPIES = 5, /* wait stack copies made by a thread on its way back to user space */
  HS_CNT_RESUME_STALE = 6,  /* of those, voided: its registers were not those it slept with */
  HS_CNT_MAX = 7
};

#endif
