/* A process whose main thread sits in uninterruptible sleep (state D) next to an ordinary
 * sleeping thread.
 *
 * Usage: vfork_block READY_FD|READY_FIFO
 * Why: a thread in D state cannot be stopped by ptrace until its kernel call returns. A
 * vfork() parent is the easy way to get one on purpose: it waits in the kernel until the
 * child execs or exits, and this child does neither (it blocks reading a pipe nobody writes),
 * so the parent stays in D until the child is killed (the tests kill the process group).
 * Threads: main ("vfork_block", state D in vfork), "hs-sleeper" (state S, reading a pipe in
 * sleeper_wait (HS-LINE sleeper_read) <- sleeper_main (HS-LINE sleeper_calls)).
 * "ready" is written once the sleeper is parked; the test then waits for the main thread's
 * D state (the parent enters it right after the child starts).
 */
#include "hs_ready.h"

#include <pthread.h>
#include <sys/wait.h>

static int sleeper_pipe[2];
static int child_pipe[2];
static int sleeper_tid, sleeper_parking;

__attribute__((noinline)) static void sleeper_wait(void) {
  char c;
  if (read(sleeper_pipe[0], &c, 1) < 0) abort(); /* HS-LINE: sleeper_read */
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void* sleeper_main(void* arg) {
  (void)arg;
  hs_store(&sleeper_tid, hs_gettid());
  hs_store(&sleeper_parking, 1);
  sleeper_wait(); /* HS-LINE: sleeper_calls */
  return NULL;
}

int main(int argc, char** argv) {
  if (pipe(sleeper_pipe) != 0 || pipe(child_pipe) != 0) hs_die("pipe failed");
  pthread_t t;
  if (pthread_create(&t, NULL, sleeper_main, NULL) != 0) hs_die("pthread_create failed");
  pthread_setname_np(t, "hs-sleeper");
  hs_wait_parked(&sleeper_parking, &sleeper_tid, SYS_read);
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  /* The child only makes system calls (no libc state is touched): it blocks until killed. */
  pid_t child = vfork(); /* HS-LINE: main_vfork */
  if (child == 0) {
    char c;
    for (;;) {
      if (syscall(SYS_read, child_pipe[0], &c, 1) <= 0) syscall(SYS_exit, 0);
    }
  }
  if (child < 0) hs_die("vfork failed");
  waitpid(child, NULL, 0);
  return 0;
}
