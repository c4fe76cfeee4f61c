#include "python/asyncio_debug.h"

#include <fmt/format.h>

#include <cstring>

namespace hangscan::python {
namespace {

// _Py_AsyncioModuleDebugOffsets, in order (Modules/_asynciomodule.c of 3.14).
enum Field : std::size_t {
  task_size,
  task_name,
  task_awaited_by,
  task_is_task,
  task_awaited_by_is_set,
  task_coro,
  task_node,
  interp_size,
  interp_tasks_head,
  tstate_size,
  tstate_running_loop,
  tstate_running_task,
  tstate_tasks_head,
};

// Offsets inside a Task or a thread state are small; the interpreter state is larger.
constexpr std::uint64_t kMaxTaskSize = 4096;
constexpr std::uint64_t kMaxStateSize = 1u << 24;

bool is_asyncio_module(const std::string& path) {
  auto slash = path.rfind('/');
  return path.compare(slash == std::string::npos ? 0 : slash + 1, 8, "_asyncio") == 0;
}

}  // namespace

Result<AsyncioLayout> asyncio_layout_from_debug(const std::uint64_t (&raw)[kAsyncioDebugFields],
                                                const PyLayout& layout) {
  const PyOffsets& o = layout.off;
  bool task_ok = raw[task_size] > 0 && raw[task_size] <= kMaxTaskSize;
  for (Field f : {task_name, task_awaited_by, task_is_task, task_coro, task_node})
    task_ok = task_ok && raw[f] >= 16 && raw[f] + 8 <= raw[task_size];
  bool state_ok = raw[tstate_size] <= kMaxStateSize && raw[interp_size] <= kMaxStateSize &&
                  raw[tstate_tasks_head] + 16 <= raw[tstate_size] &&
                  raw[interp_tasks_head] + 16 <= raw[interp_size];
  if (!task_ok || !state_ok)
    return Error(Errc::bad_data, "_asyncio's .AsyncioDebug holds implausible offsets");
  // The struct repeats sizeof(PyInterpreterState), which _Py_DebugOffsets gives too.
  if (o.interp_size >= 0 && raw[interp_size] != static_cast<std::uint64_t>(o.interp_size))
    return Error(Errc::bad_data,
                 fmt::format("_asyncio's .AsyncioDebug gives sizeof(PyInterpreterState) {} but "
                             "_Py_DebugOffsets {}: not the same build",
                             raw[interp_size], o.interp_size));
  if (o.gen_iframe < 0 || o.gen_frame_state < 0 || o.frame_stackpointer < 0)
    return Error(Errc::unsupported, "_Py_DebugOffsets has no coroutine fields");
  AsyncioLayout a;
  a.minor = layout.minor;
  a.stack = StackModel::tagged;
  // TaskObj (3.14): FutureObj_HEAD ends `..., PyObject *task_awaited_by; fut_state task_state;
  // char task_is_task; ...`, and the Task goes on `int task_num_cancels_requested; PyObject
  // *task_fut_waiter; PyObject *task_coro; ...`: the two fields the struct does not name sit
  // right before task_is_task (a 4-byte enum) and task_coro (a pointer).
  a.task_state = static_cast<std::int64_t>(raw[task_is_task]) - 4;
  a.task_fut_waiter = static_cast<std::int64_t>(raw[task_coro]) - 8;
  a.task_coro = static_cast<std::int64_t>(raw[task_coro]);
  a.task_name = static_cast<std::int64_t>(raw[task_name]);
  a.task_node = static_cast<std::int64_t>(raw[task_node]);
  a.tstate_tasks_head = static_cast<std::int64_t>(raw[tstate_tasks_head]);
  a.interp_tasks_head = static_cast<std::int64_t>(raw[interp_tasks_head]);
  a.gen_frame = o.gen_iframe;
  a.gen_frame_state = o.gen_frame_state;
  a.gen_created = -3;  // FRAME_CREATED (pycore_frame.h, 3.13 and 3.14)
  a.frame_stacktop = o.frame_stackpointer;
  if (a.task_state != static_cast<std::int64_t>(raw[task_awaited_by]) + 8)
    return Error(Errc::unsupported,
                 "_asyncio's Task is not laid out as in 3.14 (task_state does not follow "
                 "task_awaited_by)");
  return a;
}

Result<AsyncioLayout> find_asyncio_layout(ModuleSymbols& syms, MemoryReader& mem,
                                          const PyLayout& layout) {
  std::vector<std::string> mods = syms.modules();
  // The _asyncio extension first; a build with _asyncio built in has it in the interpreter
  // or libpython (the first module and those named libpython*).
  std::vector<std::string> order;
  for (const auto& m : mods)
    if (is_asyncio_module(m)) order.push_back(m);
  for (const auto& m : mods)
    if (!is_asyncio_module(m) && (m == mods.front() || m.find("libpython") != std::string::npos))
      order.push_back(m);
  for (const auto& m : order) {
    auto sec = syms.section(m, kAsyncioDebugSection);
    if (!sec) continue;
    std::uint64_t raw[kAsyncioDebugFields] = {};
    if (sec->size < sizeof(raw)) {
      return Error(Errc::bad_data,
                   fmt::format("{} in {} is {} bytes, not a _Py_AsyncioModuleDebugOffsets",
                               kAsyncioDebugSection, m, sec->size));
    }
    if (!mem.read_exact(sec->start, raw, sizeof(raw)) &&
        syms.read_from_file(m, sec->start, raw, sizeof(raw)) != sizeof(raw)) {
      return Error(Errc::io, fmt::format("{} of {} unreadable", kAsyncioDebugSection, m));
    }
    return asyncio_layout_from_debug(raw, layout);
  }
  return Error(Errc::not_found, "asyncio not imported (no module has a .AsyncioDebug section)");
}

}  // namespace hangscan::python
