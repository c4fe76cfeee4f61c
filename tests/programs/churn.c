/* Threads that start and end in a tight loop, to dump while the thread set keeps changing.
 *
 * Usage: churn READY_FD|READY_FIFO [CHURNERS=2]
 * Each "hs-churn<i>" thread creates a short-lived thread (it inherits the creator's name and
 * returns at once) and joins it, forever. "ready" once every churner has gone around its loop 100 times.
 * Main ("churn") waits in pause() (HS-LINE main_pause).
 */
#include "hs_ready.h"

#include <pthread.h>
#include <signal.h>

struct Churner {
  unsigned long rounds;
};

__attribute__((noinline)) static void* brief_main(void* arg) {
  __atomic_add_fetch((unsigned long*)arg, 1, __ATOMIC_RELAXED);
  return NULL;
}

__attribute__((noinline)) static void* churn_main(void* arg) {
  struct Churner* c = arg;
  unsigned long dummy = 0;
  pthread_t t;
  /* One line, so wherever in the loop the thread is caught, its line is HS-LINE churn. */
  for (;;) { if (!pthread_create(&t, NULL, brief_main, &dummy)) pthread_join(t, NULL); __atomic_add_fetch(&c->rounds, 1, __ATOMIC_SEQ_CST); } /* HS-LINE: churn */
  return NULL;
}

int main(int argc, char** argv) {
  int n = argc > 2 ? atoi(argv[2]) : 2;
  if (n < 1 || n > 64) hs_die("bad churner count");
  struct Churner* cs = calloc((size_t)n, sizeof *cs);
  if (!cs) hs_die("out of memory");
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(&t, NULL, churn_main, &cs[i])) hs_die("pthread_create failed");
    char name[16];
    snprintf(name, sizeof name, "hs-churn%d", i);
    pthread_setname_np(t, name);
  }
  double end = hs_now() + HS_READY_DEADLINE_S;
  for (int i = 0; i < n; ++i) {
    while (__atomic_load_n(&cs[i].rounds, __ATOMIC_SEQ_CST) < 100) {
      if (hs_now() > end) hs_die("churners did not start before the deadline");
      usleep(200);
    }
  }
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  for (;;) pause(); /* HS-LINE: main_pause */
}
