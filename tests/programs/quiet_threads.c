/* Many threads blocked in different ways, for the quiet dump (test_quiet_dump.py, benchmarks).
 *
 * Usage: quiet_threads READY_FD|READY_FIFO N [spin|tick|none]
 * N blocked threads; thread i blocks by kind i % 6: pipe read, socket recv, condition variable,
 * nanosleep, poll, epoll_wait, each a day or forever (nothing wakes them). "spin" adds one
 * thread named hs-spin that busy-loops (state R); "tick" adds hs-tick, which wakes every 2 ms
 * (nanosleep). Main waits in pause(). "ready" once every blocked thread sleeps in its call.
 */
#include "hs_ready.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#define HS_MAX 1024

struct Quiet {
  int pipe_rd;
  int sock;
  int epfd;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int tids[HS_MAX];
  int parking[HS_MAX];
  int extra_flag;
  unsigned long counter;
};

static struct Quiet q = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

__attribute__((noinline)) static void block_in(int kind) {
  static const struct timespec day = {86400, 0};
  char c;
  switch (kind) {
    case 0:
      (void)read(q.pipe_rd, &c, 1); /* HS-LINE: q_read */
      break;
    case 1:
      (void)recv(q.sock, &c, 1, 0); /* HS-LINE: q_recv */
      break;
    case 2:
      pthread_mutex_lock(&q.mu);
      pthread_cond_wait(&q.cv, &q.mu); /* HS-LINE: q_cond */
      pthread_mutex_unlock(&q.mu);
      break;
    case 3:
      nanosleep(&day, NULL); /* HS-LINE: q_sleep */
      break;
    case 4: {
      struct pollfd p = {.fd = q.pipe_rd, .events = POLLIN};
      (void)poll(&p, 1, -1); /* HS-LINE: q_poll */
      break;
    }
    default: {
      struct epoll_event ev;
      (void)epoll_wait(q.epfd, &ev, 1, -1); /* HS-LINE: q_epoll */
      break;
    }
  }
}

static void* blocked_main(void* arg) {
  int i = (int)(long)arg;
  hs_store(&q.tids[i], hs_gettid());
  hs_store(&q.parking[i], 1);
  for (;;) block_in(i % 6);
  return NULL;
}

static void* spin_main(void* arg) {
  (void)arg;
  hs_store(&q.extra_flag, 1);
  for (;;) __atomic_add_fetch(&q.counter, 1, __ATOMIC_RELAXED); /* HS-LINE: q_spin */
  return NULL;
}

static void* tick_main(void* arg) {
  (void)arg;
  static const struct timespec ms2 = {0, 2000000};
  hs_store(&q.extra_flag, 1);
  for (;;) nanosleep(&ms2, NULL); /* HS-LINE: q_tick */
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) hs_die("usage: quiet_threads READY N [spin|tick|none]");
  int n = atoi(argv[2]);
  if (n < 1 || n > HS_MAX) hs_die("N out of range");
  const char* extra = argc > 3 ? argv[3] : "none";
  int fds[2], socks[2];
  if (pipe(fds) || socketpair(AF_UNIX, SOCK_STREAM, 0, socks)) hs_die("pipe/socketpair failed");
  q.pipe_rd = fds[0];
  q.sock = socks[0];
  q.epfd = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  if (q.epfd < 0 || epoll_ctl(q.epfd, EPOLL_CTL_ADD, fds[0], &ev)) hs_die("epoll failed");
  pthread_t t;
  for (int i = 0; i < n; ++i) {
    if (pthread_create(&t, NULL, blocked_main, (void*)(long)i)) hs_die("pthread_create failed");
    char name[16];
    snprintf(name, sizeof name, "hs-q%d", i);
    pthread_setname_np(t, name);
  }
  for (int i = 0; i < n; ++i) hs_wait_parked(&q.parking[i], &q.tids[i], -1);
  if (strcmp(extra, "none") != 0) {
    int spin = strcmp(extra, "spin") == 0;
    if (pthread_create(&t, NULL, spin ? spin_main : tick_main, NULL)) hs_die("pthread_create");
    pthread_setname_np(t, spin ? "hs-spin" : "hs-tick");
    hs_wait_flag(&q.extra_flag);
  }
  hs_say_ready(argv[1]);
  for (;;) pause(); /* HS-LINE: q_main */
}
