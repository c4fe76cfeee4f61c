/* A native program that dies of a chosen signal, for `hangscan core` tests.
 *
 * Usage: crash_native READY MODE
 *   null      SIGSEGV reading address 0 in read_null()
 *   overflow  SIGSEGV from endless recursion in recurse() (stack overflow)
 *   fpe       SIGFPE from an integer division by zero in divide()
 *   abort     SIGABRT from abort() in give_up()
 *   ill       SIGILL from ud2 in illegal()
 *   wait      a worker thread and the main thread block in read() of a pipe that never gets
 *             data (for a core taken with kill -SEGV or gcore)
 * It says "ready" (hs_ready.h) right before it crashes, or once both threads are parked.
 * The environment is left as given, so RANK/WORLD_SIZE reach the core's initial stack.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "hs_ready.h"

static const char* ready_to;
static int block_pipe[2];
static int worker_parked;
static int worker_tid;

__attribute__((noinline)) int read_null(volatile int* p) {
  hs_say_ready(ready_to);
  return *p; /* HS-LINE: null */
}

__attribute__((noinline)) int recurse(int depth) {
  volatile char pad[256];
  pad[0] = (char)depth;
  return recurse(depth + 1) + pad[0]; /* HS-LINE: overflow */
}

__attribute__((noinline)) int divide(volatile int a, volatile int b) {
  hs_say_ready(ready_to);
  return a / b; /* HS-LINE: fpe */
}

__attribute__((noinline)) void give_up(void) {
  hs_say_ready(ready_to);
  abort(); /* HS-LINE: abort */
}

__attribute__((noinline)) void illegal(void) {
  hs_say_ready(ready_to);
  __asm__ volatile("ud2"); /* HS-LINE: ill */
}

__attribute__((noinline)) void block_in_read(int* parked) {
  char c;
  if (parked) hs_store(parked, 1);
  ssize_t n = read(block_pipe[0], &c, 1); /* HS-LINE: wait_read */
  (void)n;
}

static void* worker(void* arg) {
  (void)arg;
  hs_store(&worker_tid, hs_gettid());
  block_in_read(&worker_parked);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s READY null|overflow|fpe|abort|ill|wait\n", argv[0]);
    return 2;
  }
  ready_to = argv[1];
  const char* mode = argv[2];
  if (strcmp(mode, "null") == 0) return read_null(NULL);
  if (strcmp(mode, "overflow") == 0) {
    hs_say_ready(ready_to);
    return recurse(0);
  }
  if (strcmp(mode, "fpe") == 0) return divide(1, 0);
  if (strcmp(mode, "abort") == 0) give_up();
  if (strcmp(mode, "ill") == 0) illegal();
  if (strcmp(mode, "wait") == 0) {
    if (pipe(block_pipe) != 0) return 3;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    hs_wait_parked(&worker_parked, &worker_tid, SYS_read);
    hs_say_ready(ready_to);
    block_in_read(NULL);
    return 0;
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
