// A native program that dies of a chosen signal, for `hangscan core` tests.
//
// Usage: crash_native MODE [READY_FD]
//   null      SIGSEGV reading address 0 in read_null()
//   overflow  SIGSEGV from endless recursion in recurse() (stack overflow)
//   fpe       SIGFPE from an integer division by zero in divide()
//   abort     SIGABRT from abort() in give_up()
//   ill       SIGILL from ud2 in illegal()
//   wait      a worker thread and the main thread block in read() of a pipe that never
//             gets data (for a core taken with kill -SEGV or gcore)
// Before crashing (or blocking) it writes "ready\n" to READY_FD (default 1) so a test knows
// the process got there. The environment is left as given (RANK etc. reach the core).
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int ready_fd = 1;
static int block_pipe[2];

static void say_ready(void) {
  if (write(ready_fd, "ready\n", 6) != 6) _exit(3);
}

__attribute__((noinline)) int read_null(volatile int* p) {
  say_ready();
  return *p;  // CRASH_NULL_LINE
}

__attribute__((noinline)) int recurse(int depth) {
  volatile char pad[256];
  pad[0] = (char)depth;
  return recurse(depth + 1) + pad[0];  // CRASH_OVERFLOW_LINE
}

__attribute__((noinline)) int divide(volatile int a, volatile int b) {
  say_ready();
  return a / b;  // CRASH_FPE_LINE
}

__attribute__((noinline)) void give_up(void) {
  say_ready();
  abort();  // CRASH_ABORT_LINE
}

__attribute__((noinline)) void illegal(void) {
  say_ready();
  __asm__ volatile("ud2");  // CRASH_ILL_LINE
}

__attribute__((noinline)) void block_in_read(void) {
  char c;
  ssize_t n = read(block_pipe[0], &c, 1);  // WAIT_READ_LINE
  (void)n;
}

static void* worker(void* arg) {
  (void)arg;
  block_in_read();
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s null|overflow|fpe|abort|ill|wait [READY_FD]\n", argv[0]);
    return 2;
  }
  if (argc > 2) ready_fd = atoi(argv[2]);
  const char* mode = argv[1];
  if (strcmp(mode, "null") == 0) return read_null(NULL);
  if (strcmp(mode, "overflow") == 0) {
    say_ready();
    return recurse(0);
  }
  if (strcmp(mode, "fpe") == 0) return divide(1, 0);
  if (strcmp(mode, "abort") == 0) give_up();
  if (strcmp(mode, "ill") == 0) illegal();
  if (strcmp(mode, "wait") == 0) {
    if (pipe(block_pipe) != 0) return 3;
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    say_ready();
    block_in_read();
    return 0;
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
