/* A process with N threads, each blocked in a distinct-but-known function.
 *
 * Usage: many_threads READY_FD|READY_FIFO [N=200]
 * Thread i (0-based) is named "hs-w<i>" and blocks in park_<i % 4>, called from worker_main
 * (HS-LINE worker_calls_park):
 *   park_0: read() on a pipe nobody writes            (HS-LINE park_0, syscall read)
 *   park_1: pthread_cond_wait on its own condition    (HS-LINE park_1, syscall futex)
 *   park_2: nanosleep for a day, again and again      (HS-LINE park_2, syscall clock_nanosleep)
 *   park_3: poll() on the same pipe                   (HS-LINE park_3, syscall poll)
 * Main ("many_threads") waits in pause() (HS-LINE main_pause). N + 1 threads in all.
 */
#include "hs_ready.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>

struct Worker {
  int index;
  int tid;
  int parking;
  int pipe_rd;
  pthread_mutex_t mu;
  pthread_cond_t cv;
};

__attribute__((noinline)) static void park_0(struct Worker* w) {
  char c;
  hs_store(&w->parking, 1);
  while (read(w->pipe_rd, &c, 1) != 0) { /* HS-LINE: park_0 */
  }
}

__attribute__((noinline)) static void park_1(struct Worker* w) {
  pthread_mutex_lock(&w->mu);
  hs_store(&w->parking, 1);
  for (;;) pthread_cond_wait(&w->cv, &w->mu); /* HS-LINE: park_1 */
}

__attribute__((noinline)) static void park_2(struct Worker* w) {
  struct timespec day = {86400, 0};
  hs_store(&w->parking, 1);
  for (;;) nanosleep(&day, NULL); /* HS-LINE: park_2 */
}

__attribute__((noinline)) static void park_3(struct Worker* w) {
  struct pollfd p = {.fd = w->pipe_rd, .events = POLLIN};
  hs_store(&w->parking, 1);
  while (poll(&p, 1, -1) >= 0 || errno == EINTR) { /* HS-LINE: park_3 */
    if (p.revents & POLLHUP) break;
  }
}

static void (*const kParks[4])(struct Worker*) = {park_0, park_1, park_2, park_3};

__attribute__((noinline)) static void* worker_main(void* arg) {
  struct Worker* w = arg;
  hs_store(&w->tid, hs_gettid());
  kParks[w->index % 4](w); /* HS-LINE: worker_calls_park */
  return NULL;
}

int main(int argc, char** argv) {
  int n = argc > 2 ? atoi(argv[2]) : 200;
  if (n < 1 || n > 100000) hs_die("bad thread count");
  int fds[2];
  if (pipe(fds)) hs_die("pipe failed");
  struct Worker* ws = calloc((size_t)n, sizeof *ws);
  if (!ws) hs_die("out of memory");
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  for (int i = 0; i < n; ++i) {
    ws[i].index = i;
    ws[i].pipe_rd = fds[0];
    pthread_mutex_init(&ws[i].mu, NULL);
    pthread_cond_init(&ws[i].cv, NULL);
    pthread_t t;
    if (pthread_create(&t, &attr, worker_main, &ws[i])) hs_die("pthread_create failed");
    char name[16];
    snprintf(name, sizeof name, "hs-w%d", i);
    pthread_setname_np(t, name);
    pthread_detach(t);
  }
  static const long kSyscalls[4] = {SYS_read, SYS_futex, SYS_clock_nanosleep, SYS_poll};
  for (int i = 0; i < n; ++i) hs_wait_parked(&ws[i].parking, &ws[i].tid, kSyscalls[i % 4]);
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  for (;;) pause(); /* HS-LINE: main_pause */
}
