// The 3.14 AsyncioLayout built from _asyncio's own _Py_AsyncioModuleDebugOffsets.
#include <gtest/gtest.h>

#include "python/asyncio_layout.h"

namespace hangscan::python {
namespace {

// .AsyncioDebug of Debian's python3.14 3.14.10 (lib-dynload/_asyncio.cpython-314-x86_64-linux-
// gnu.so), read with readelf: Task size, name, awaited_by, is_task, awaited_by_is_set, coro,
// node; interpreter size, tasks head; thread state size, running loop, running task, tasks head.
constexpr std::uint64_t kDebian31410[kAsyncioDebugFields] = {168,    136,   96,  108, 109, 128, 152,
                                                             225864, 10880, 936, 864, 872, 880};

PyLayout layout_314() {
  PyLayout l;
  l.minor = 14;
  l.off.interp_size = 225864;
  l.off.gen_iframe = 80;
  l.off.gen_frame_state = 75;
  l.off.frame_stackpointer = 64;
  return l;
}

TEST(AsyncioDebug, DerivesTheTaskLayoutOfDebian314) {
  auto a = asyncio_layout_from_debug(kDebian31410, layout_314());
  ASSERT_TRUE(a.ok()) << a.error().what();
  EXPECT_EQ(a->stack, StackModel::tagged);
  EXPECT_EQ(a->task_name, 136);
  EXPECT_EQ(a->task_coro, 128);
  EXPECT_EQ(a->task_fut_waiter, 120);  // the pointer before task_coro
  EXPECT_EQ(a->task_state, 104);       // the enum after task_awaited_by, before task_is_task
  EXPECT_EQ(a->task_node, 152);
  EXPECT_EQ(a->tstate_tasks_head, 880);
  EXPECT_EQ(a->interp_tasks_head, 10880);
  EXPECT_EQ(a->gen_frame, 80);
  EXPECT_EQ(a->gen_frame_state, 75);
  EXPECT_EQ(a->gen_created, -3);
  EXPECT_EQ(a->frame_stacktop, 64);
}

TEST(AsyncioDebug, RefusesBytesThatAreNotTheStruct) {
  PyLayout other = layout_314();
  other.off.interp_size = 225872;  // another build's interpreter
  EXPECT_EQ(asyncio_layout_from_debug(kDebian31410, other).error().code, Errc::bad_data);

  std::uint64_t outside[kAsyncioDebugFields];
  std::copy(std::begin(kDebian31410), std::end(kDebian31410), outside);
  outside[1] = 4000;  // task_name past the end of the Task
  EXPECT_EQ(asyncio_layout_from_debug(outside, layout_314()).error().code, Errc::bad_data);

  std::uint64_t zeros[kAsyncioDebugFields] = {};
  EXPECT_EQ(asyncio_layout_from_debug(zeros, layout_314()).error().code, Errc::bad_data);

  std::uint64_t moved[kAsyncioDebugFields];
  std::copy(std::begin(kDebian31410), std::end(kDebian31410), moved);
  moved[3] = 116;  // task_is_task no longer right after the state enum
  EXPECT_EQ(asyncio_layout_from_debug(moved, layout_314()).error().code, Errc::unsupported);

  PyLayout no_gen = layout_314();
  no_gen.off.gen_iframe = -1;  // _Py_DebugOffsets without coroutine fields (3.13)
  EXPECT_EQ(asyncio_layout_from_debug(kDebian31410, no_gen).error().code, Errc::unsupported);
}

}  // namespace
}  // namespace hangscan::python
