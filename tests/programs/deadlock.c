/* Two threads deadlocked on two mutexes (the classic lock-order inversion).
 *
 * Usage: deadlock READY_FD|READY_FIFO
 * Threads: main ("deadlock", in pthread_join), "hs-lock-a" (holds m1, waits for m2),
 * "hs-lock-b" (holds m2, waits for m1). Expected stacks, innermost first:
 *   hs-lock-a: ... pthread_mutex_lock -> lock_second (HS-LINE lock_second)
 *              -> thread_a_main (HS-LINE a_calls_second) -> start_thread -> clone3
 *   hs-lock-b: ... pthread_mutex_lock -> lock_second (HS-LINE lock_second)
 *              -> thread_b_main (HS-LINE b_calls_second)
 *   main:      ... pthread_join -> main (HS-LINE main_join)
 */
#include "hs_ready.h"

#include <pthread.h>

struct Deadlock {
  pthread_mutex_t m1, m2;
  pthread_barrier_t both_hold_first;
  int tid_a, tid_b;
  int a_parking, b_parking;
};

/* noinline so the frame is real in -O2 code; the unlock after the lock keeps it from
 * becoming a tail call. */
__attribute__((noinline)) static void lock_second(pthread_mutex_t* m) {
  if (pthread_mutex_lock(m) != 0) abort(); /* HS-LINE: lock_second */
  pthread_mutex_unlock(m);
}

__attribute__((noinline)) static void* thread_a_main(void* arg) {
  struct Deadlock* d = arg;
  hs_store(&d->tid_a, hs_gettid());
  pthread_mutex_lock(&d->m1);
  pthread_barrier_wait(&d->both_hold_first);
  hs_store(&d->a_parking, 1);
  lock_second(&d->m2); /* HS-LINE: a_calls_second */
  pthread_mutex_unlock(&d->m1);
  return NULL;
}

__attribute__((noinline)) static void* thread_b_main(void* arg) {
  struct Deadlock* d = arg;
  hs_store(&d->tid_b, hs_gettid());
  pthread_mutex_lock(&d->m2);
  pthread_barrier_wait(&d->both_hold_first);
  hs_store(&d->b_parking, 1);
  lock_second(&d->m1); /* HS-LINE: b_calls_second */
  pthread_mutex_unlock(&d->m2);
  return NULL;
}

int main(int argc, char** argv) {
  static struct Deadlock d = {.m1 = PTHREAD_MUTEX_INITIALIZER, .m2 = PTHREAD_MUTEX_INITIALIZER};
  pthread_barrier_init(&d.both_hold_first, NULL, 2);
  pthread_t a, b;
  if (pthread_create(&a, NULL, thread_a_main, &d) || pthread_create(&b, NULL, thread_b_main, &d))
    hs_die("pthread_create failed");
  pthread_setname_np(a, "hs-lock-a");
  pthread_setname_np(b, "hs-lock-b");
  hs_wait_parked(&d.a_parking, &d.tid_a, SYS_futex);
  hs_wait_parked(&d.b_parking, &d.tid_b, SYS_futex);
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  pthread_join(a, NULL); /* HS-LINE: main_join */
  return 0;
}
