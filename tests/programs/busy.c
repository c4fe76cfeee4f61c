/* A busy-looping thread (state R) next to a blocked one.
 *
 * Usage: busy READY_FD|READY_FIFO
 * Threads: main ("busy", in pthread_join) and "hs-spin", which never leaves spin_forever
 * (HS-LINE spin) -> spin_main (HS-LINE spin_main_calls). It makes no syscalls, so its
 * state is R and its syscall is "running".
 */
#include "hs_ready.h"

#include <pthread.h>

struct Spinner {
  int spinning;
  unsigned long counter;
};

__attribute__((noinline)) static void spin_forever(struct Spinner* s) {
  hs_store(&s->spinning, 1);
  for (;;) __atomic_add_fetch(&s->counter, 1, __ATOMIC_RELAXED); /* HS-LINE: spin */
}

__attribute__((noinline)) static void* spin_main(void* arg) {
  spin_forever(arg); /* HS-LINE: spin_main_calls */
  return NULL;
}

int main(int argc, char** argv) {
  static struct Spinner s;
  pthread_t t;
  if (pthread_create(&t, NULL, spin_main, &s)) hs_die("pthread_create failed");
  pthread_setname_np(t, "hs-spin");
  hs_wait_flag(&s.spinning);
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  pthread_join(t, NULL); /* HS-LINE: main_join */
  return 0;
}
