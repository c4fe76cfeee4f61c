// AsyncioLayout: where a version keeps what asyncio tasks need (the C Task's coroutine, name and
// awaited future; a coroutine's frame and value stack).
//
// Why: the C Task struct is private to CPython's _asyncio module (no header has it), so its
// offsets come from the DWARF of real builds (tools/gen_asyncio_offsets.py ->
// asyncio_offsets.cpp), kept apart from PyLayout, whose rows come from the headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "hangscan/result.h"
#include "python/layout.h"

namespace hangscan::python {

// How the top of a suspended frame's value stack is found (what the frame awaits).
enum class StackModel {
  pointer,  // 3.8-3.9: PyFrameObject.f_stacktop points past the top
  depth,    // 3.10: f_valuestack[f_stackdepth - 1]
  index,    // 3.11-3.13: localsplus[stacktop - 1] of the embedded _PyInterpreterFrame
  tagged,   // 3.14: stackpointer[-1], a _PyStackRef (tag bits cleared)
};

struct AsyncioLayout {
  int minor = 0;
  StackModel stack = StackModel::pointer;
  std::int64_t task_state = -1;        // TaskObj.task_state (int: 0 pending)
  std::int64_t task_fut_waiter = -1;   // TaskObj.task_fut_waiter (the future it waits on)
  std::int64_t task_coro = -1;         // TaskObj.task_coro
  std::int64_t task_name = -1;         // TaskObj.task_name (str, or int N for "Task-N")
  std::int64_t gen_frame = -1;         // gi_frame (pointer, <3.11) / gi_iframe (embedded, 3.11+)
  std::int64_t gen_frame_state = -1;   // gi_frame_state (int8, 3.11+)
  std::int64_t gen_created = 0;        // gi_frame_state of a coroutine not started yet
  std::int64_t frame_stacktop = -1;    // f_stacktop / f_stackdepth / stacktop (see StackModel)
  std::int64_t frame_valuestack = -1;  // f_valuestack / localsplus
  // 3.14+: tasks are not in asyncio.tasks' registries but in linked lists (struct llist_node
  // {next, prev}) headed in each thread state and in the interpreter (tasks of ended threads).
  std::int64_t task_node = -1;          // TaskObj.task_node
  std::int64_t tstate_tasks_head = -1;  // _PyThreadStateImpl.asyncio_tasks_head
  std::int64_t interp_tasks_head = -1;  // PyInterpreterState.asyncio_tasks_head
};

// The generated rows (asyncio_offsets.cpp), 3.8-3.13.
const std::vector<AsyncioLayout>& asyncio_layouts();

// The row of a minor version, nullopt when none was generated.
std::optional<AsyncioLayout> asyncio_layout(int minor);

// 3.14+: the _asyncio module describes its Task and task lists in a section `.AsyncioDebug`
// (_Py_AsyncioModuleDebugOffsets, 13 uint64 in this order).
inline constexpr char kAsyncioDebugSection[] = ".AsyncioDebug";
inline constexpr std::size_t kAsyncioDebugFields = 13;

// The row built from that struct and the interpreter's own layout (PyLayout of
// _Py_DebugOffsets: coroutine and frame fields). `interp_size` is the interpreter_state.size
// _Py_DebugOffsets gives, which the struct repeats: a mismatch means the bytes are not the
// struct. The two Task fields the struct lacks come from TaskObj's definition (see .cpp).
Result<AsyncioLayout> asyncio_layout_from_debug(const std::uint64_t (&raw)[kAsyncioDebugFields],
                                                const PyLayout& layout);

}  // namespace hangscan::python
