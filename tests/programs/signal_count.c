/* Counts the real-time signals it receives, so a test can check that signals sent while
 * hangscan holds the process stopped are delivered afterwards, none lost, none doubled.
 *
 * Usage: signal_count READY_FD|READY_FIFO [THREADS=3]
 * SIGRTMIN+1 is counted (real-time signals queue, so every one sent must arrive);
 * SIGRTMIN+2 makes it write "count N\n" to stderr. Besides main (in pause(), HS-LINE
 * main_pause) it runs THREADS "hs-sig<i>" threads blocked in read() on a pipe (HS-LINE
 * sig_thread_read), so a process-directed signal may land on any thread.
 */
#include "hs_ready.h"

#include <pthread.h>
#include <signal.h>

struct Counter {
  int count;
  int pipe_rd;
  int tids[256];
  int parking[256];
  int next;
};

static struct Counter counter;  /* a signal handler can only reach static storage */

static void on_count(int sig) {
  (void)sig;
  __atomic_add_fetch(&counter.count, 1, __ATOMIC_SEQ_CST);
}

static void on_report(int sig) {
  (void)sig;
  char buf[32] = "count ";
  char digits[16];
  int n = __atomic_load_n(&counter.count, __ATOMIC_SEQ_CST), len = 0, pos = 6;
  do {
    digits[len++] = (char)('0' + n % 10);
    n /= 10;
  } while (n > 0);
  while (len > 0) buf[pos++] = digits[--len];
  buf[pos++] = '\n';
  if (write(2, buf, (size_t)pos) < 0) _exit(4);
}

__attribute__((noinline)) static void* sig_thread_main(void* arg) {
  int i = (int)(long)arg;
  char c;
  hs_store(&counter.tids[i], hs_gettid());
  hs_store(&counter.parking[i], 1);
  while (read(counter.pipe_rd, &c, 1) != 0) { /* HS-LINE: sig_thread_read */
  }
  return NULL;
}

int main(int argc, char** argv) {
  int n = argc > 2 ? atoi(argv[2]) : 3;
  if (n < 0 || n > 256) hs_die("bad thread count");
  int fds[2];
  if (pipe(fds)) hs_die("pipe failed");
  counter.pipe_rd = fds[0];
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = on_count;
  if (sigaction(SIGRTMIN + 1, &sa, NULL)) hs_die("sigaction failed");
  sa.sa_handler = on_report;
  if (sigaction(SIGRTMIN + 2, &sa, NULL)) hs_die("sigaction failed");
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(&t, NULL, sig_thread_main, (void*)(long)i)) hs_die("pthread_create failed");
    char name[16];
    snprintf(name, sizeof name, "hs-sig%d", i);
    pthread_setname_np(t, name);
  }
  for (int i = 0; i < n; ++i) hs_wait_parked(&counter.parking[i], &counter.tids[i], SYS_read);
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  for (;;) pause(); /* HS-LINE: main_pause */
}
