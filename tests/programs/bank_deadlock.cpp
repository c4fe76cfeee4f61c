// Two bank threads deadlocked on two std::mutex (lock-order inversion, ABBA).
//
// Usage: bank_deadlock READY_FD|READY_FIFO
// Threads: main (in join), "transfer" (holds from.m, waits for to.m: HS-LINE transfer_lock),
// "audit" (holds to.m, waits for from.m: HS-LINE audit_lock). Says ready once both sleep in
// futex on the second lock.
#include "hs_ready.h"

#include <pthread.h>

#include <mutex>
#include <thread>

struct Account {
  std::mutex m;
  long balance = 100;
};

static Account checking, savings;
static pthread_barrier_t both_hold_first;
static int tid_transfer, tid_audit, transfer_parking, audit_parking;

__attribute__((noinline)) static void transfer(Account& from, Account& to) {
  std::lock_guard<std::mutex> a(from.m);
  pthread_barrier_wait(&both_hold_first);
  hs_store(&transfer_parking, 1);
  std::lock_guard<std::mutex> b(to.m); /* HS-LINE: transfer_lock */
  from.balance -= 10;
  to.balance += 10;
}

__attribute__((noinline)) static long audit(Account& x, Account& y) {
  std::lock_guard<std::mutex> a(y.m);
  pthread_barrier_wait(&both_hold_first);
  hs_store(&audit_parking, 1);
  std::lock_guard<std::mutex> b(x.m); /* HS-LINE: audit_lock */
  return x.balance + y.balance;
}

int main(int argc, char** argv) {
  pthread_barrier_init(&both_hold_first, NULL, 2);
  std::thread t1([] {
    pthread_setname_np(pthread_self(), "transfer");
    hs_store(&tid_transfer, hs_gettid());
    transfer(checking, savings);
  });
  std::thread t2([] {
    pthread_setname_np(pthread_self(), "audit");
    hs_store(&tid_audit, hs_gettid());
    audit(checking, savings);
  });
  hs_wait_parked(&transfer_parking, &tid_transfer, SYS_futex);
  hs_wait_parked(&audit_parking, &tid_audit, SYS_futex);
  hs_say_ready(argc > 1 ? argv[1] : NULL);
  t1.join();
  t2.join();
  return 0;
}
