/* A fork storm: a parent that forks 20 short-lived children every 10 ms, for ever.
 *
 * Usage: fork_storm READY_FD|READY_FIFO [CHILDREN=20]
 * Every 10 ms (HS-LINE pause) the parent reaps the children that ended (waitpid WNOHANG) and
 * forks CHILDREN new ones (HS-LINE fork), which sleep 20 ms and exit. So about 40 children
 * live at any time, and those that ended are zombies until the next round: a capture that
 * reads the tree sees children vanish, and zombies that are reaped a moment later.
 * "ready" after 5 rounds.
 */
#include "hs_ready.h"

#include <sys/wait.h>

__attribute__((noinline)) static void child_main(void) {
  usleep(20000);
  _exit(0);
}

__attribute__((noinline)) static void storm_round(int children) {
  while (waitpid(-1, NULL, WNOHANG) > 0) continue;
  for (int i = 0; i < children; ++i) {
    if (fork() == 0) child_main(); /* HS-LINE: fork */
  }
}

int main(int argc, char** argv) {
  int n = argc > 2 ? atoi(argv[2]) : 20;
  if (n < 1 || n > 200) hs_die("bad child count");
  for (unsigned long round = 0;; ++round) {
    storm_round(n);
    if (round == 5) hs_say_ready(argc > 1 ? argv[1] : NULL);
    usleep(10000); /* HS-LINE: pause */
  }
  return 0;
}
