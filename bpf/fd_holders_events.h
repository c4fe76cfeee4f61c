/* The records of the fd-holders iterator (bpf/fd_holders.bpf.c), shared with user space
 * (src/capture/bpf_fd_holders.cpp).
 *
 * Why a header of its own: the iterator writes these records into its seq_file and user space
 * reads them back byte for byte, so both sides must agree on one layout. */
#ifndef HANGSCAN_FD_HOLDERS_EVENTS_H
#define HANGSCAN_FD_HOLDERS_EVENTS_H

#include "watch_events.h" /* hs_u32, hs_u64 */

/* kind of one record: what /proc/PID/fd/N would read "pipe:[ino]" or "socket:[ino]" for */
#define HS_FD_PIPE 1u
#define HS_FD_SOCKET 2u
#define HS_FD_TABLE 3u /* the first fd of a process's table: fd and ino are 0 */

/* fds the iterator looks at on the whole node before it stops (NodeFds::kMaxFds) */
#define HS_FD_MAX_FDS (1u << 21)

/* One fd of one process whose file is an anonymous pipe or a socket, or (HS_FD_TABLE) a process
 * whose fd table the iterator visited. */
struct hs_fd_holder {
  hs_u32 tgid;
  hs_u32 fd;
  hs_u64 ino;
  hs_u32 kind;
  hs_u32 f_flags; /* O_ACCMODE and the rest, as fdinfo's flags */
};

#endif
