/* One thread per blocking call, each counting how often its call fails with EINTR, so a test
 * can tell which calls a capture's ptrace stop makes return early (docs/troubleshooting.md).
 *
 * Usage: eintr_calls READY_FD|READY_FIFO
 * Threads, each named after its call and blocked in it forever (nothing ever wakes them):
 *   hs-epoll     epoll_wait(-1) on a pipe nobody writes
 *   hs-recvto    recv() on a socket with SO_RCVTIMEO of a day
 *   hs-semtimed  semtimedop() with a timeout of a day (in a private IPC namespace, so the
 *                semaphore goes when the process does)
 *   hs-sigtimed  sigtimedwait() for SIGUSR1 (blocked), a day
 *   hs-read      read() on the pipe
 *   hs-futex     futex(FUTEX_WAIT) on a word nobody changes
 *   hs-nanosleep nanosleep() for a day
 *   hs-poll      poll(-1) on the pipe
 *   hs-recv      recv() on a socket without a timeout
 * Each EINTR is written to stderr as "eintr NAME\n"; any other return as "other NAME RC ERRNO\n".
 * Main waits in pause(). Needs root (unshare(CLONE_NEWIPC)).
 */
#include "hs_ready.h"

#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/sem.h>
#include <sys/socket.h>

#define HS_CALLS 9

struct Calls {
  int pipe_rd;
  int sock_to;
  int sock;
  int epfd;
  int semid;
  int futex_word;
  int tids[HS_CALLS];
  int parking[HS_CALLS];
};

static struct Calls calls;

static const char* const kNames[HS_CALLS] = {"hs-epoll", "hs-recvto",   "hs-semtimed",
                                             "hs-sigtimed", "hs-read",  "hs-futex",
                                             "hs-nanosleep", "hs-poll", "hs-recv"};

static long one_call(int i) {
  static const struct timespec day = {86400, 0};
  char c;
  switch (i) {
    case 0: {
      struct epoll_event ev;
      return epoll_wait(calls.epfd, &ev, 1, -1);
    }
    case 1:
      return recv(calls.sock_to, &c, 1, 0);
    case 2: {
      struct sembuf op = {0, -1, 0};
      return semtimedop(calls.semid, &op, 1, &day);
    }
    case 3: {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGUSR1);
      return sigtimedwait(&set, NULL, &day);
    }
    case 4:
      return read(calls.pipe_rd, &c, 1);
    case 5:
      return syscall(SYS_futex, &calls.futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    case 6:
      return nanosleep(&day, NULL);
    case 7: {
      struct pollfd p = {.fd = calls.pipe_rd, .events = POLLIN};
      return poll(&p, 1, -1);
    }
    default:
      return recv(calls.sock, &c, 1, 0);
  }
}

static void* call_main(void* arg) {
  int i = (int)(long)arg;
  char line[96];
  hs_store(&calls.tids[i], hs_gettid());
  for (;;) {
    hs_store(&calls.parking[i], 1);
    long rc = one_call(i); /* HS-LINE: call */
    int err = errno;
    int n = rc == -1 && err == EINTR
                ? snprintf(line, sizeof line, "eintr %s\n", kNames[i])
                : snprintf(line, sizeof line, "other %s %ld %d\n", kNames[i], rc, err);
    if (write(2, line, (size_t)n) != n) _exit(4);
  }
  return NULL;
}

static void setup(void) {
  if (unshare(CLONE_NEWIPC)) hs_die("unshare(CLONE_NEWIPC) failed (needs root)");
  int fds[2];
  if (pipe(fds)) hs_die("pipe failed");
  calls.pipe_rd = fds[0];
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) hs_die("socketpair failed");
  calls.sock_to = sv[0];
  struct timeval tv = {86400, 0};
  if (setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv)) hs_die("SO_RCVTIMEO failed");
  calls.sock = sv[1];
  calls.epfd = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  if (calls.epfd < 0 || epoll_ctl(calls.epfd, EPOLL_CTL_ADD, fds[0], &ev)) hs_die("epoll failed");
  calls.semid = semget(IPC_PRIVATE, 1, 0600);
  if (calls.semid < 0) hs_die("semget failed");
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, NULL);  /* inherited by every thread */
}

int main(int argc, char** argv) {
  setup();
  for (int i = 0; i < HS_CALLS; ++i) {
    pthread_t t;
    if (pthread_create(&t, NULL, call_main, (void*)(long)i)) hs_die("pthread_create failed");
    pthread_setname_np(t, kNames[i]);
    pthread_detach(t);
  }
  for (int i = 0; i < HS_CALLS; ++i) hs_wait_parked(&calls.parking[i], &calls.tids[i], -1);
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  for (;;) pause(); /* HS-LINE: main_pause */
}
