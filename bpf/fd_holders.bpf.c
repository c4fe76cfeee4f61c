// SPDX-License-Identifier: GPL-2.0
/* hangscan's node-wide fd scan: every process's fds that are anonymous pipes or sockets, in one
 * pass of a task_file iterator (src/proc/node_fds.h says what the holders prove).
 *
 * Why an iterator: reading every /proc/PID/fd/N link of a node costs thousands of readlink
 * calls (a few milliseconds of a dump, nearly all in the kernel); the iterator visits the same
 * fd tables in one read. A thread sharing its leader's table is skipped by the kernel, so each
 * table is seen once. Pipes and sockets are told apart the way /proc names them: by the file
 * system of the inode (pipefs, sockfs), whose inode number is the one in "pipe:[ino]".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "fd_holders_events.h"

char LICENSE[] SEC("license") = "GPL";

#define HS_PIPEFS_MAGIC 0x50495045
#define HS_SOCKFS_MAGIC 0x534F434B

/* fds looked at in this pass (read by user space afterwards; reset before each pass) */
volatile __u64 fds_seen = 0;
/* The process whose table the pass is in: a record says each new one, so user space knows
 * which tables were seen (reset before each pass). */
volatile __u32 last_tgid = 0;

SEC("iter/task_file")
int fd_holders(struct bpf_iter__task_file* ctx) {
  struct task_struct* task = ctx->task;
  struct file* file = ctx->file;
  if (task == NULL || file == NULL) return 0;
  if (fds_seen >= HS_FD_MAX_FDS) return 0;
  fds_seen++;
  struct hs_fd_holder r = {};
  r.tgid = BPF_CORE_READ(task, tgid);
  if (r.tgid != last_tgid) {
    last_tgid = r.tgid;
    r.kind = HS_FD_TABLE;
    bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
  }
  struct inode* inode = BPF_CORE_READ(file, f_inode);
  if (inode == NULL) return 0;
  unsigned long magic = BPF_CORE_READ(inode, i_sb, s_magic);
  if (magic == HS_PIPEFS_MAGIC) {
    r.kind = HS_FD_PIPE;
  } else if (magic == HS_SOCKFS_MAGIC) {
    r.kind = HS_FD_SOCKET;
  } else {
    return 0;
  }
  r.fd = ctx->fd;
  r.ino = BPF_CORE_READ(inode, i_ino);
  r.f_flags = BPF_CORE_READ(file, f_flags);
  bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
  return 0;
}
