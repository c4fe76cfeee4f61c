/* snapshot_lskel.h: the light skeleton of bpf/snapshot.bpf.c, generated at build time. */
#include "capture/snapshot_lskel.h"

#include <errno.h>

#include "snapshot.lskel.h"

struct snapshot* hs_snapshot_load(void) {
  struct snapshot* s = snapshot__open();
  if (s == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  int err = snapshot__load(s);
  if (err != 0) {
    snapshot__destroy(s); /* may change errno: set after */
    errno = err < 0 ? -err : EINVAL;
    return NULL;
  }
  return s;
}

void hs_snapshot_destroy(struct snapshot* s) { snapshot__destroy(s); }

int hs_snapshot_prog_fd(const struct snapshot* s) { return s->progs.snapshot_threads.prog_fd; }

volatile uint32_t* hs_snapshot_target_tgid(struct snapshot* s) { return &s->bss->target_tgid; }

volatile uint32_t* hs_snapshot_copy_stacks(struct snapshot* s) { return &s->data->copy_stacks; }
