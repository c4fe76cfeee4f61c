/* A process that keeps re-executing itself, so captures race with exec.
 *
 * Usage: exec_loop READY_FD|READY_FIFO|- [THREADS=40] [GENERATION=0] [PERIOD_US=5000] [ON_TRACE=0]
 * Each generation starts THREADS - 1 "hs-x<i>" threads blocked in read() on a pipe nobody
 * writes, except the first ("hs-x0", started first), which, once all are parked, waits
 * PERIOD_US and then execve()s
 * /proc/self/exe with GENERATION + 1 (a non-leader thread: the kernel kills every other thread
 * and makes it the leader). With ON_TRACE=1 it execs as soon as "hs-x1" is traced instead (it
 * looks without pause, and from its start after the first generation): a tracer that attaches
 * in thread id order then traces the leader, hs-x0 and hs-x1, and has the others still to
 * attach, while the exec kills them all.
 * Main waits in pause(). Generation 0 says "ready" once its threads are parked; later ones get
 * "-" and say nothing. The current generation is argv[3], so a test reads /proc/PID/cmdline to
 * see that the process still execs.
 */
#include "hs_ready.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#define HS_MAX_THREADS 256

struct Loop {
  int n;
  int pipe_rd;
  int tids[HS_MAX_THREADS];
  int parking[HS_MAX_THREADS];
  int all_parked;
  long period_us;
  int on_trace;
  long generation;
  char threads_arg[16];
  char on_trace_arg[4];
  char next_generation[24];
  char period_arg[24];
};

static struct Loop loop;

/* Whether thread `tid` of this process has a tracer. */
static int traced(int tid) {
  char buf[2048];
  snprintf(buf, sizeof buf, "/proc/self/task/%d/status", tid);
  int fd = open(buf, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char* at = strstr(buf, "TracerPid:");
  return at && atoi(at + 10) != 0;
}

__attribute__((noinline)) static void reexec(void) {
  char* args[] = {"exec_loop",           "-",           loop.threads_arg, loop.next_generation,
                  loop.period_arg,       loop.on_trace_arg, NULL};
  if (!loop.on_trace || loop.generation == 0)
    while (!hs_load(&loop.all_parked)) usleep(100);
  double end = hs_now() + (double)loop.period_us / 1e6;
  if (loop.on_trace) {
    while (!hs_load(&loop.tids[1])) sched_yield();
    while (hs_now() < end && !traced(hs_load(&loop.tids[1]))) sched_yield();
  } else {
    struct timespec ts = {loop.period_us / 1000000, (loop.period_us % 1000000) * 1000};
    nanosleep(&ts, NULL);
  }
  execv("/proc/self/exe", args); /* HS-LINE: exec */
  hs_die("execv failed");
}

__attribute__((noinline)) static void* thread_main(void* arg) {
  int i = (int)(long)arg;
  char c;
  hs_store(&loop.tids[i], hs_gettid());
  if (i == 0) reexec();
  hs_store(&loop.parking[i], 1);
  while (read(loop.pipe_rd, &c, 1) != 0) { /* HS-LINE: park */
  }
  return NULL;
}

int main(int argc, char** argv) {
  loop.n = argc > 2 ? atoi(argv[2]) : 40;
  long generation = argc > 3 ? atol(argv[3]) : 0;
  loop.generation = generation;
  loop.period_us = argc > 4 ? atol(argv[4]) : 5000;
  loop.on_trace = argc > 5 ? atoi(argv[5]) : 0;
  snprintf(loop.on_trace_arg, sizeof loop.on_trace_arg, "%d", loop.on_trace ? 1 : 0);
  if (loop.n < 2 || loop.n > HS_MAX_THREADS) hs_die("bad thread count");
  snprintf(loop.threads_arg, sizeof loop.threads_arg, "%d", loop.n);
  snprintf(loop.next_generation, sizeof loop.next_generation, "%ld", generation + 1);
  snprintf(loop.period_arg, sizeof loop.period_arg, "%ld", loop.period_us);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC)) hs_die("pipe failed");
  loop.pipe_rd = fds[0];
  for (int i = 0; i < loop.n - 1; ++i) {
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, (void*)(long)i)) hs_die("pthread_create failed");
    char name[16];
    snprintf(name, sizeof name, "hs-x%d", i);
    pthread_setname_np(t, name);
    pthread_detach(t);
  }
  for (int i = 1; i < loop.n - 1; ++i) hs_wait_parked(&loop.parking[i], &loop.tids[i], SYS_read);
  if (generation == 0) hs_say_ready(argc > 1 ? argv[1] : NULL);
  hs_store(&loop.all_parked, 1);
  for (;;) pause(); /* HS-LINE: main_pause */
}
