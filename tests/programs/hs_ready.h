/* Shared by the target programs in tests/programs/: the "ready" handshake.
 *
 * Why: tests must never sleep and hope. A program only says "ready" once every thread it
 * promised is parked at its known line, which it checks from outside the thread by reading
 * /proc/self/task/TID/syscall (the kernel shows the syscall a blocked thread sleeps in, or
 * "running"). Each thread sets a flag right before the blocking call; once the flag is set
 * and the thread sleeps in the expected syscall, it is at its HS-LINE.
 *
 * argv[1] is either a file descriptor number (an inherited pipe) or a FIFO path.
 * Every wait here has a deadline: a program that cannot get ready exits 3.
 */
#ifndef HS_READY_H
#define HS_READY_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HS_READY_DEADLINE_S 30.0

static inline double hs_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void hs_die(const char* what) {
  fprintf(stderr, "target: %s\n", what);
  exit(3);
}

/* Flags and tids are plain ints accessed atomically so C and C++ targets share this header. */
static inline int hs_load(const int* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static inline void hs_store(int* p, int v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

static inline int hs_gettid(void) { return (int)syscall(SYS_gettid); }

/* Syscall number a thread of this process sleeps in, -1 when running, -2 when unreadable. */
static inline long hs_thread_syscall(int tid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -2;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -2;
  buf[n] = 0;
  if (strncmp(buf, "running", 7) == 0) return -1;
  return strtol(buf, NULL, 10);
}

/* Waits until `flag` is set and thread `tid` sleeps in syscall `nr` (nr < 0: any syscall). */
static inline void hs_wait_parked(const int* flag, const int* tid, long nr) {
  double end = hs_now() + HS_READY_DEADLINE_S;
  for (;;) {
    if (hs_load(flag)) {
      long s = hs_thread_syscall(hs_load(tid));
      if ((nr < 0 && s >= 0) || (nr >= 0 && s == nr)) return;
    }
    if (hs_now() > end) hs_die("threads did not park before the deadline");
    usleep(200);
  }
}

/* Waits until a thread sets `flag` (the busy-loop case: it never sleeps in a syscall). */
static inline void hs_wait_flag(const int* flag) {
  double end = hs_now() + HS_READY_DEADLINE_S;
  while (!hs_load(flag)) {
    if (hs_now() > end) hs_die("flag not set before the deadline");
    usleep(200);
  }
}

/* Writes "ready\n" to argv[1] (fd number or FIFO path) and closes it. */
static inline void hs_say_ready(const char* where) {
  if (!where) hs_die("usage: PROGRAM READY_FD|READY_FIFO [args]");
  char* end = NULL;
  long fd = strtol(where, &end, 10);
  if (!end || *end != 0 || end == where) {
    fd = open(where, O_WRONLY | O_CLOEXEC);
    if (fd < 0) hs_die("cannot open the ready FIFO");
  }
  static const char msg[] = "ready\n";
  if (write((int)fd, msg, sizeof msg - 1) != (ssize_t)(sizeof msg - 1)) hs_die("ready write failed");
  close((int)fd);
}

#endif
