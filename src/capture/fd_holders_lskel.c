/* fd_holders_lskel.h: the light skeleton of bpf/fd_holders.bpf.c, generated at build time. */
#include "capture/fd_holders_lskel.h"

#include <errno.h>

#include "fd_holders.lskel.h"

struct fd_holders* hs_fd_holders_load(void) {
  struct fd_holders* s = fd_holders__open();
  if (s == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  int err = fd_holders__load(s);
  if (err != 0) {
    fd_holders__destroy(s); /* may change errno: set after */
    errno = err < 0 ? -err : EINVAL;
    return NULL;
  }
  return s;
}

void hs_fd_holders_destroy(struct fd_holders* s) { fd_holders__destroy(s); }

int hs_fd_holders_prog_fd(const struct fd_holders* s) { return s->progs.fd_holders.prog_fd; }

volatile uint64_t* hs_fd_holders_seen(struct fd_holders* s) {
  return (volatile uint64_t*)&s->bss->fds_seen; /* __u64 is unsigned long long */
}

volatile uint32_t* hs_fd_holders_last_tgid(struct fd_holders* s) { return &s->bss->last_tgid; }
