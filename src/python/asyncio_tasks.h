// Reading asyncio tasks (name, coroutine chain, what each waits for) out of a target's memory.
//
// Why: a hung asyncio service has one thread parked in epoll_wait and all its real state in
// Task objects: which task waits on which is the question, and no thread stack answers it.
// Read after the target resumed (like thread names): a hung loop does not move, and a core
// does not either. Neither py-spy nor PyStack shows this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "python/asyncio_layout.h"
#include "python/layout.h"
#include "python/objects.h"

namespace hangscan::python {

inline constexpr std::size_t kMaxTasks = 4096;
inline constexpr std::size_t kMaxAwaitDepth = 64;

// A suspended coroutine's frame, before its code object is decoded.
struct RawCoroutine {
  std::uint64_t frame = 0;  // frame address (PyFrameObject, or the embedded _PyInterpreterFrame)
  std::uint64_t code = 0;
  std::uint64_t instr = 0;  // f_lasti / instruction pointer, as the thread walk reads it
};

struct RawAsyncioTask {
  std::uint64_t address = 0;
  std::string name;
  std::vector<RawCoroutine> coroutines;    // innermost (most deeply awaited) first
  std::uint64_t fut_waiter = 0;            // what the task waits on, 0 nothing
  std::string awaits;                      // its type name
  std::optional<std::string> awaits_task;  // its name when it is a task
};

// What one read of an interpreter found. Why a struct and not a bare vector: a read can
// succeed and still leave tasks out, and the reader says so beside the tasks it did read.
struct AsyncioRead {
  std::vector<RawAsyncioTask> tasks;
  std::string note;  // empty, or why there is no task / which ones were left out
};

// The task objects asyncio.tasks' registries hold, before they are read.
struct TaskObjects {
  std::vector<std::uint64_t> objects;
  std::string note;  // empty, or which registry could not be read
};

class AsyncioReader {
 public:
  AsyncioReader(ObjectReader& objects, const PyLayout& layout, const AsyncioLayout& async)
      : objects_(objects), layout_(layout), async_(async) {}

  // The pending C tasks asyncio registered in interpreter `interp` (asyncio.tasks' _all_tasks,
  // or _scheduled_tasks and _eager_tasks from 3.12; from 3.14 the task lists of the
  // interpreter and of those of `tstates` that belong to it), sorted by name, with a note when
  // there are none or some were left out. An error when asyncio.tasks is not imported.
  Result<AsyncioRead> read(std::uint64_t interp, const std::vector<std::uint64_t>& tstates);

 private:
  // 3.14+: the tasks on the linked lists headed in the interpreter and its thread states.
  std::vector<std::uint64_t> listed(std::uint64_t interp,
                                    const std::vector<std::uint64_t>& tstates);
  // The objects of asyncio.tasks' registries (a note names a registry that was unreadable);
  // an error when asyncio.tasks is not imported.
  Result<TaskObjects> registered(std::uint64_t interp);
  std::optional<RawAsyncioTask> task(std::uint64_t obj);
  // The coroutine chain from `coro` on, each frame where it is suspended.
  std::vector<RawCoroutine> chain(std::uint64_t coro);
  // The top of a suspended frame's value stack: what it awaits (0 unknown).
  std::uint64_t awaited(std::uint64_t frame);

  ObjectReader& objects_;
  const PyLayout& layout_;
  const AsyncioLayout& async_;
};

}  // namespace hangscan::python
