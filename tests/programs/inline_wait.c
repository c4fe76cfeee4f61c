/* A thread in a condition wait reached through an always_inline function.
 *
 * Usage: inline_wait READY_FD|READY_FIFO
 * Threads: main ("inline_wait", in pthread_join) and "hs-condwait". Expected stack of
 * hs-condwait, innermost first:
 *   ... pthread_cond_wait
 *   -> wait_for_signal   kind "inline", inline_wait.c:HS-LINE cond_wait
 *   -> wait_outer        kind "native", inline_wait.c:HS-LINE outer_calls_inner
 *   -> condwait_main     kind "native", inline_wait.c:HS-LINE main_calls_outer
 */
#include "hs_ready.h"

#include <pthread.h>

struct Waiter {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int signalled;
  int tid;
  int parking;
};

/* always_inline: DWARF keeps it as a DW_TAG_inlined_subroutine inside wait_outer, which the
 * unwinder must report as an "inline" frame with this file:line. */
__attribute__((always_inline)) static inline void wait_for_signal(struct Waiter* w) {
  while (!w->signalled) {
    hs_store(&w->parking, 1);
    pthread_cond_wait(&w->cv, &w->mu); /* HS-LINE: cond_wait */
  }
}

__attribute__((noinline)) static void wait_outer(struct Waiter* w) {
  pthread_mutex_lock(&w->mu);
  wait_for_signal(w); /* HS-LINE: outer_calls_inner */
  pthread_mutex_unlock(&w->mu);
}

__attribute__((noinline)) static void* condwait_main(void* arg) {
  struct Waiter* w = arg;
  hs_store(&w->tid, hs_gettid());
  wait_outer(w); /* HS-LINE: main_calls_outer */
  return NULL;
}

int main(int argc, char** argv) {
  static struct Waiter w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
  pthread_t t;
  if (pthread_create(&t, NULL, condwait_main, &w)) hs_die("pthread_create failed");
  pthread_setname_np(t, "hs-condwait");
  hs_wait_parked(&w.parking, &w.tid, SYS_futex);
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  pthread_join(t, NULL); /* HS-LINE: main_join */
  return 0;
}
