// AsyncioReader::read on fabricated interpreters: the error when asyncio.tasks is not imported,
// and the note beside an empty read.
#include <gtest/gtest.h>

#include "fake_python.h"
#include "python/asyncio_tasks.h"

namespace hangscan::python {
namespace {

using testing::FakePython;

TEST(AsyncioTasks, AnInterpreterWithoutAsyncioTasksIsAnError) {
  FakePython py(*builtin_layout(3, 11));
  std::uint64_t interp = py.interp();
  py.put_u64(interp + py.off().interp_modules, py.dict({{py.str("sys"), py.str("x")}}));
  auto mem = py.memory();
  ObjectReader objects(*mem, py.layout());
  const AsyncioLayout async = *asyncio_layout(11);  // the reader keeps a reference
  AsyncioReader reader(objects, py.layout(), async);
  auto read = reader.read(interp, {});
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, Errc::not_found);
  EXPECT_EQ(read.error().what(), "asyncio not imported");
}

TEST(AsyncioTasks, EmptyTaskListsReadAsNoPendingTask) {
  FakePython py(*builtin_layout(3, 11));
  std::uint64_t interp = py.interp();
  AsyncioLayout async = *asyncio_layout(11);
  // The 3.14 way: a circular list headed in the interpreter, empty (pointing to itself).
  async.task_node = 64;
  async.interp_tasks_head = 4096;
  async.tstate_tasks_head = 512;
  py.put_u64(interp + 4096, interp + 4096);
  auto mem = py.memory();
  ObjectReader objects(*mem, py.layout());
  AsyncioReader reader(objects, py.layout(), async);
  auto read = reader.read(interp, {});
  ASSERT_TRUE(read.ok()) << read.error().what();
  EXPECT_TRUE(read->tasks.empty());
  EXPECT_EQ(read->note, "no pending asyncio task");
}

}  // namespace
}  // namespace hangscan::python
