/* The snapshot program's light skeleton (bpftool gen skeleton -L), behind a C interface.
 *
 * Why a light skeleton: loading it reads no BTF in user space. The kernel relocates the
 * program's field accesses (CO-RE) and finds the iterator's attach point itself, with the BTF it
 * already holds; libbpf's skeleton read and parsed /sys/kernel/btf/vmlinux (~5 MB, 1,300 reads)
 * on every load, 10-45 ms, against 1-3 ms (docs/performance.md). Why C: the generated header is
 * C only (it converts from void*). Needs Linux 5.17+ (kernel CO-RE); the iterator needs 5.18.
 * Everything it makes is a file descriptor: the kernel frees it when hangscan ends. */
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct snapshot;

/* Loads the program; NULL with errno set when the kernel refuses. */
struct snapshot* hs_snapshot_load(void);
/* Closes every fd of the program (links made from prog_fd are the caller's). */
void hs_snapshot_destroy(struct snapshot* s);
int hs_snapshot_prog_fd(const struct snapshot* s);
/* The program's globals (bpf/snapshot.bpf.c), written before each pass. */
volatile uint32_t* hs_snapshot_target_tgid(struct snapshot* s);
volatile uint32_t* hs_snapshot_copy_stacks(struct snapshot* s);

#ifdef __cplusplus
}
#endif
