// The RLock a thread waits on: an object of type "_thread.RLock" near the stack pointer whose
// semaphore is the futex address (3.6-3.13), or whose mutex is the key of the queued parking-lot
// entry whose semaphore is the futex address (3.14), owned by another thread of the process
// (read from this test's own memory, laid out as CPython lays out the objects and glibc the
// thread).
#include "proc/python_rlock.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <future>

#include <gtest/gtest.h>

namespace hangscan {
namespace {

struct FakeType {
  std::array<std::uint64_t, 3> head{};  // ob_refcnt, ob_type, ob_size
  const char* tp_name = nullptr;
};

struct FakeRLock {
  std::uint64_t refcnt = 1;
  const FakeType* type = nullptr;
  std::uint64_t lock = 0;  // the semaphore
  std::uint64_t owner = 0;
  std::uint64_t count = 1;
};

// 3.14: {ob_refcnt, ob_type, _PyRecursiveMutex {mutex, thread, level}}.
struct FakeRLock314 {
  std::uint64_t refcnt = 1;
  const FakeType* type = nullptr;
  std::uint64_t mutex = 3;  // locked, waiters parked
  std::uint64_t thread = 0;
  std::uint64_t level = 0;  // held once
};

std::uint64_t address(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

class PythonRLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A thread that stays alive while the test runs: the RLock's owner.
    owner_ = std::async(std::launch::async, [this] {
      ident_.set_value(
          {static_cast<std::uint64_t>(::pthread_self()), static_cast<int>(::syscall(SYS_gettid))});
      release_.get_future().wait();
    });
    auto [ident, tid] = ident_.get_future().get();
    owner_tid_ = tid;
    rlock_.type = &rlock_type_;
    rlock_.lock = address(&semaphore_);
    rlock_.owner = ident;
    stack_.fill(0x1234);
    stack_[40] = address(&rlock_);
    rlock314_.type = &rlock_type_;
    rlock314_.thread = ident;
    // The parking lot's wait entry at stack_[60]: park_arg, addr, sema (4 words), node; the
    // node is queued alone in a bucket whose root is `bucket_`.
    stack_[60] = address(&stack_[100]);
    stack_[61] = address(&rlock314_.mutex);
    stack_[62] = 0;
    bucket_ = {address(&stack_[66]), address(&stack_[66])};
    stack_[66] = stack_[67] = address(bucket_.data());
  }
  void TearDown() override {
    release_.set_value();
    owner_.wait();
  }
  std::optional<RLockHolder> holder(std::uint64_t futex) {
    int self = static_cast<int>(::syscall(SYS_gettid));
    return python_rlock_holder(static_cast<int>(::getpid()), self, address(&stack_[20]), futex,
                               {self, owner_tid_});
  }

  FakeType rlock_type_{{}, "_thread.RLock"};
  FakeType lock_type_{{}, "_thread.lock"};
  FakeRLock rlock_;
  FakeRLock314 rlock314_;
  std::array<std::uint64_t, 2> bucket_{};
  std::uint32_t semaphore_ = 0;
  std::array<std::uint64_t, 600> stack_{};
  std::promise<std::pair<std::uint64_t, int>> ident_;
  std::promise<void> release_;
  std::future<void> owner_;
  int owner_tid_ = 0;
};

TEST_F(PythonRLockTest, TheOwnerOfTheRLockWhoseSemaphoreTheThreadWaitsOn) {
  auto h = holder(address(&semaphore_));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->object, address(&rlock_));
  EXPECT_EQ(h->owner_tid, owner_tid_);
}

TEST_F(PythonRLockTest, NothingIsGuessed) {
  EXPECT_FALSE(holder(address(&semaphore_) + 8));  // another futex
  rlock_.type = &lock_type_;                       // a threading.Lock: no owner recorded
  EXPECT_FALSE(holder(address(&semaphore_)));
  rlock_.type = &rlock_type_;
  rlock_.count = 0;  // released
  EXPECT_FALSE(holder(address(&semaphore_)));
  rlock_.count = 1;
  rlock_.owner = address(&stack_);  // not a thread control block
  EXPECT_FALSE(holder(address(&semaphore_)));
}

TEST_F(PythonRLockTest, TheOwnerOfTheRLockWhoseMutexTheParkedThreadWaitsFor) {
  auto h = holder(address(&stack_[62]));  // 3.14: the wait entry's semaphore
  ASSERT_TRUE(h);
  EXPECT_EQ(h->object, address(&rlock314_));
  EXPECT_EQ(h->owner_tid, owner_tid_);
  rlock314_.level = 2;  // held three times
  EXPECT_TRUE(holder(address(&stack_[62])));
}

TEST_F(PythonRLockTest, NothingIsGuessedForAParkedThread) {
  const std::uint64_t sema = address(&stack_[62]);
  rlock314_.type = &lock_type_;  // a threading.Lock: no owner recorded
  EXPECT_FALSE(holder(sema));
  rlock314_.type = &rlock_type_;
  rlock314_.mutex = 1;  // no waiter parked: not what a parked thread sees
  EXPECT_FALSE(holder(sema));
  rlock314_.mutex = 3;
  rlock314_.thread = 0;  // released
  EXPECT_FALSE(holder(sema));
  rlock314_.thread = address(&stack_);  // not a thread control block
  EXPECT_FALSE(holder(sema));
  rlock314_.thread = rlock_.owner;
  bucket_[0] = 0;  // the entry is no longer queued
  EXPECT_FALSE(holder(sema));
  bucket_[0] = address(&stack_[66]);
  EXPECT_FALSE(holder(address(&stack_[10])));  // below the stack pointer
  ASSERT_TRUE(holder(sema));
}

}  // namespace
}  // namespace hangscan
