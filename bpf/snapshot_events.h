/* The records of the quiet-dump iterator (bpf/snapshot.bpf.c), shared with user space
 * (src/capture/bpf_snapshot.cpp).
 *
 * Why a header of its own: the iterator writes these records into its seq_file and user space
 * reads them back byte for byte, so both sides must agree on one layout. */
#ifndef HANGSCAN_SNAPSHOT_EVENTS_H
#define HANGSCAN_SNAPSHOT_EVENTS_H

#include "watch_events.h" /* struct hs_regs, HS_STACK_PAGE */

/* The top of a sleeping thread's user stack the iterator copies (the rest is read by user space
 * between the two passes, while the sleep sequence proves the thread did not run). */
#define HS_SNAP_STACK_PAGES 4
#define HS_SNAP_STACK_BYTES (HS_SNAP_STACK_PAGES * HS_STACK_PAGE)

/* flags of one record */
#define HS_SNAP_ASLEEP 1u /* asleep when found and still asleep, same sequence, after the copy */
#define HS_SNAP_COPIED 2u /* registers and stack were copied (the first pass) */

/* One thread of the target: written for every thread, asleep or not (then flags 0), followed by
 * `stack_len` bytes of stack from regs.sp when HS_SNAP_COPIED. */
struct hs_snap_thread {
  hs_u32 tid;
  hs_u32 flags;
  hs_u64 seq; /* nvcsw + nivcsw: grows each time the thread leaves a CPU */
  hs_u64 state;
  hs_u64 fs_base;
  hs_u32 stack_len;
  hs_u32 pad;
  struct hs_regs regs;
};

#endif
