// The owner of a contended mutex, from the futex call and the mutex's first words.
#include "proc/blocking_waits.h"

#include <gtest/gtest.h>
#include <linux/futex.h>
#include <pthread.h>

namespace hangscan {
namespace {

const std::set<int> kTids = {100, 101, 102};

std::vector<std::uint64_t> call(std::uint64_t op, std::uint64_t val) {
  return {0x5000, op, val, 0, 0, 0};
}

TEST(MutexOwner, NormalMutexWithWaitersNamesItsOwner) {
  MutexWords w{2, 0, 101, 1};
  EXPECT_EQ(mutex_owner(call(FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 2), w, kTids, 100), 101);
  EXPECT_EQ(mutex_owner(call(FUTEX_WAIT, 2), w, kTids, 100), 101);
}

TEST(MutexOwner, RobustAndPiMutexesKeepTheOwnerInTheLockWord) {
  MutexWords robust{101u | FUTEX_WAITERS, 0, 101, 1};
  EXPECT_EQ(mutex_owner(call(FUTEX_WAIT_BITSET, 101u | FUTEX_WAITERS), robust, kTids, 100), 101);
  MutexWords pi{102u | FUTEX_WAITERS, 0, 102, 1};
  EXPECT_EQ(mutex_owner(call(FUTEX_LOCK_PI | FUTEX_PRIVATE_FLAG, 0), pi, kTids, 100), 102);
}

TEST(MutexOwner, WhatDoesNotLookLikeAMutexNamesNobody) {
  // A condition variable or semaphore waits on another value; the word at 8 is no owner.
  EXPECT_EQ(mutex_owner(call(FUTEX_WAIT, 0), MutexWords{0, 0, 101, 0}, kTids, 100), std::nullopt);
  // The owner is not a thread of the process, or is the waiter itself.
  EXPECT_EQ(mutex_owner(call(FUTEX_WAIT, 2), MutexWords{2, 0, 999, 1}, kTids, 100), std::nullopt);
  EXPECT_EQ(mutex_owner(call(FUTEX_WAIT, 2), MutexWords{2, 0, 100, 1}, kTids, 100), std::nullopt);
  // The lock word changed since the call: not the value it waits on.
  EXPECT_EQ(mutex_owner(call(FUTEX_WAIT, 2), MutexWords{1, 0, 101, 1}, kTids, 100), std::nullopt);
  // A PI word naming another thread than __owner; a wake, not a wait.
  EXPECT_EQ(mutex_owner(call(FUTEX_LOCK_PI, 0), MutexWords{102, 0, 101, 1}, kTids, 100),
            std::nullopt);
  EXPECT_EQ(mutex_owner(call(FUTEX_WAKE, 2), MutexWords{2, 0, 101, 1}, kTids, 100), std::nullopt);
  EXPECT_EQ(mutex_owner({0x5000, 0}, MutexWords{2, 0, 101, 1}, kTids, 100), std::nullopt);
}

TEST(MutexOwner, ReadsThisProcesssOwnMutex) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&m);
  auto w = read_mutex_words(getpid(), reinterpret_cast<std::uint64_t>(&m));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->lock, 1u);
  EXPECT_EQ(w->owner, gettid());
  pthread_mutex_unlock(&m);
  EXPECT_EQ(read_mutex_words(getpid(), 0), std::nullopt);
}

}  // namespace
}  // namespace hangscan
