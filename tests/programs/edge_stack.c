/* A spinning thread whose stack mapping ends right above its outermost frames.
 *
 * Usage: edge_stack READY_FD|READY_FIFO [deep]
 * Threads: main (blocked in pause) and one made with clone() on a stack of its own: 64 KiB
 * readable, then a PROT_NONE page at its top (no thread descriptor or TLS above it, as a
 * pthread would have). It runs edge_main (a 1 KiB local) -> deep_frame (a 5000-byte local) ->
 * spin_at_edge, which never returns and makes no system call. Its innermost stack pointer is
 * then ~6 KiB below the unreadable page: a copy of the top of the stack in 4-KiB reads gets
 * its first 4 KiB only (the second read crosses into the page and fails), which holds
 * spin_at_edge's and deep_frame's frames but not deep_frame's return address into
 * edge_main. Why: the recorder must keep what is readable below the end of a stack.
 * With `deep`, edge_main calls deeper_frame (a 20000-byte local) instead of deep_frame: every
 * read of a 16-KiB copy succeeds, but deeper_frame's return address lies above the copy, so a
 * sampled stack ends there: spin_at_edge, deeper_frame, and nothing of edge_main or __clone.
 * Why: a stack deeper than its copy must be reported as cut, not as whole.
 */
#include "hs_ready.h"

#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#define EDGE_STACK (64 * 1024)

static int spinning;
static unsigned long counter;

__attribute__((noinline)) static void spin_at_edge(volatile char* buf) {
  buf[0] = 1;
  hs_store(&spinning, 1);
  for (;;) __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED); /* HS-LINE: edge_spin */
}

__attribute__((noinline)) static void deep_frame(void) {
  volatile char buf[5000];
  spin_at_edge(buf); /* HS-LINE: deep_calls */
  buf[4999] = 0;
}

__attribute__((noinline)) static void deeper_frame(void) {
  volatile char buf[20000];
  spin_at_edge(buf); /* HS-LINE: deeper_calls */
  buf[19999] = 0;
}

__attribute__((noinline)) static int edge_main(void* arg) {
  volatile char pad[1024];
  pad[0] = 1;
  if (arg != NULL) deeper_frame();
  else deep_frame(); /* HS-LINE: edge_main_calls */
  return pad[1023];
}

int main(int argc, char** argv) {
  long page = sysconf(_SC_PAGESIZE);
  char* region = mmap(NULL, EDGE_STACK + page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (region == MAP_FAILED) hs_die("mmap failed");
  if (mprotect(region + EDGE_STACK, page, PROT_NONE) != 0) hs_die("mprotect failed");
  int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
  void* deep = argc > 2 && strcmp(argv[2], "deep") == 0 ? argv[2] : NULL;
  if (clone(edge_main, region + EDGE_STACK, flags, deep) < 0) hs_die("clone failed");
  hs_wait_flag(&spinning);
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  for (;;) pause(); /* HS-LINE: main_pause */
}
