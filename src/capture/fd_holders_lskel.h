/* The fd-holders program's light skeleton (bpftool gen skeleton -L), behind a C interface.
 *
 * Why a light skeleton: as the snapshot's (snapshot_lskel.h), loading it reads no BTF in user
 * space: the kernel relocates the program and finds the iterator's attach point itself. Why C:
 * the generated header is C only. Everything it makes is a file descriptor: the kernel frees
 * it when hangscan ends. */
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fd_holders;

/* Loads the program; NULL with errno set when the kernel refuses. */
struct fd_holders* hs_fd_holders_load(void);
/* Closes every fd of the program (links made from prog_fd are the caller's). */
void hs_fd_holders_destroy(struct fd_holders* s);
int hs_fd_holders_prog_fd(const struct fd_holders* s);
/* fds the last pass looked at (bpf/fd_holders.bpf.c); zeroed by user space before a pass. */
volatile uint64_t* hs_fd_holders_seen(struct fd_holders* s);
/* The process the last pass was in (bpf/fd_holders.bpf.c); zeroed by user space before a pass. */
volatile uint32_t* hs_fd_holders_last_tgid(struct fd_holders* s);

#ifdef __cplusplus
}
#endif
