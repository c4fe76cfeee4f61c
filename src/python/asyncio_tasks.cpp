#include "python/asyncio_tasks.h"

#include <algorithm>

#include <fmt/format.h>

#include "python/python_reader.h"

namespace hangscan::python {
namespace {

constexpr std::string_view kTaskType = "_asyncio.Task";
// asyncio.tasks' registries: every task (3.8-3.11), or the scheduled ones and those started
// eagerly (3.12+). A WeakSet holds weak references, a set the tasks themselves.
constexpr std::string_view kRegistries[] = {"_all_tasks", "_scheduled_tasks", "_eager_tasks"};

std::int64_t low32(std::uint64_t word) { return static_cast<std::int32_t>(word & 0xffffffffu); }
std::int64_t low8(std::uint64_t word) { return static_cast<std::int8_t>(word & 0xffu); }

}  // namespace

std::optional<AsyncioLayout> asyncio_layout(int minor) {
  for (const auto& row : asyncio_layouts())
    if (row.minor == minor) return row;
  return std::nullopt;
}

std::vector<std::uint64_t> AsyncioReader::listed(std::uint64_t interp,
                                                 const std::vector<std::uint64_t>& tstates) {
  std::vector<std::uint64_t> heads{interp + static_cast<std::uint64_t>(async_.interp_tasks_head)};
  for (std::uint64_t ts : tstates) {
    auto owner = objects_.read_word(ts + layout_.off.tstate_interp);
    if (owner && *owner == interp)
      heads.push_back(ts + static_cast<std::uint64_t>(async_.tstate_tasks_head));
  }
  std::vector<std::uint64_t> out;
  for (std::uint64_t head : heads) {
    // A circular list through llist_node.next; an empty one points to itself (a thread state
    // never used by asyncio may hold zeros).
    auto node = objects_.read_word(head);
    while (node && *node != head && *node != 0 && out.size() < kMaxTasks) {
      out.push_back(*node - static_cast<std::uint64_t>(async_.task_node));
      node = objects_.read_word(*node);
    }
  }
  return out;
}

Result<TaskObjects> AsyncioReader::registered(std::uint64_t interp) {
  const PyOffsets& o = layout_.off;
  auto modules = objects_.read_word(interp + o.interp_modules);
  auto module =
      modules && *modules != 0 ? objects_.dict_get(*modules, "asyncio.tasks") : std::nullopt;
  auto md = module ? objects_.read_word(*module + o.module_dict) : std::nullopt;
  if (!md || *md == 0) return Error(Errc::not_found, "asyncio not imported");
  TaskObjects out;
  for (std::string_view key : kRegistries) {
    auto reg = objects_.dict_get(*md, key);
    if (!reg) continue;
    std::string type = objects_.type_name(*reg).value_or("");
    bool weak = type == "WeakSet";
    auto set = weak ? objects_.attribute(*reg, "data") : reg;
    auto items = set ? objects_.set_items(*set, kMaxTasks) : std::nullopt;
    if (!items) {
      out.note = fmt::format("asyncio.tasks.{} unreadable", key);
      continue;
    }
    for (std::uint64_t item : *items) {
      // A weak reference's wr_object follows PyObject_HEAD.
      auto obj = weak ? objects_.read_word(item + layout_.off.object_head) : std::optional(item);
      if (obj && *obj != 0) out.objects.push_back(*obj);
    }
  }
  return out;
}

Result<AsyncioRead> AsyncioReader::read(std::uint64_t interp,
                                        const std::vector<std::uint64_t>& tstates) {
  auto objs = async_.task_node >= 0 ? Result<TaskObjects>(TaskObjects{listed(interp, tstates), {}})
                                    : registered(interp);
  if (!objs) return std::move(objs).error();
  AsyncioRead out;
  out.note = std::move(objs->note);
  std::size_t foreign = 0;
  for (std::uint64_t obj : objs->objects) {
    if (objects_.type_name(obj).value_or("") != kTaskType) {
      ++foreign;  // a Python Task (or a subclass): its layout is not the C struct's
      continue;
    }
    if (auto t = task(obj)) out.tasks.push_back(std::move(*t));
  }
  std::sort(out.tasks.begin(), out.tasks.end(), [](const auto& a, const auto& b) {
    return a.name != b.name ? a.name < b.name : a.address < b.address;
  });
  if (foreign != 0)
    out.note = fmt::format("{} tasks not of type {} were left out", foreign, kTaskType);
  else if (out.tasks.empty()) out.note = "no pending asyncio task";
  return out;
}

std::optional<RawAsyncioTask> AsyncioReader::task(std::uint64_t obj) {
  auto state = objects_.read_word(obj + async_.task_state);
  if (!state || low32(*state) != 0) return std::nullopt;  // done or cancelled: not pending
  auto task_name = [&](std::uint64_t t) -> std::string {
    auto name = objects_.read_word(t + async_.task_name);
    if (!name) return "?";
    if (objects_.type_name(*name).value_or("") == "int") {  // 3.13: "Task-N" made lazily
      auto n = objects_.read_long(*name);
      auto digits = n ? long_to_decimal(*n, 24) : std::nullopt;
      return digits ? "Task-" + *digits : "?";
    }
    return objects_.read_str(*name, kMaxStringChars).value_or("?");
  };
  RawAsyncioTask out;
  out.address = obj;
  out.name = task_name(obj);
  if (auto coro = objects_.read_word(obj + async_.task_coro); coro && *coro != 0)
    out.coroutines = chain(*coro);
  auto waiter = objects_.read_word(obj + async_.task_fut_waiter);
  if (waiter && *waiter != 0) {
    out.fut_waiter = *waiter;
    out.awaits = objects_.type_name(*waiter).value_or("?");
    if (out.awaits == kTaskType) out.awaits_task = task_name(*waiter);
  }
  return out;
}

std::vector<RawCoroutine> AsyncioReader::chain(std::uint64_t coro) {
  const PyOffsets& o = layout_.off;
  std::vector<RawCoroutine> outer_first;
  while (coro != 0 && outer_first.size() < kMaxAwaitDepth) {
    std::string type = objects_.type_name(coro).value_or("");
    if (type != "coroutine" && type != "generator") break;
    RawCoroutine c;
    bool created = false;
    if (async_.gen_frame_state >= 0) {  // 3.11+: the frame lives inside the coroutine
      auto state = objects_.read_word(coro + async_.gen_frame_state);
      if (!state) break;
      created = low8(*state) == async_.gen_created;
      if (!created && low8(*state) >= 0) break;  // running, finished or cleared
      c.frame = coro + static_cast<std::uint64_t>(async_.gen_frame);
    } else {
      auto frame = objects_.read_word(coro + async_.gen_frame);
      if (!frame || *frame == 0) break;  // finished
      c.frame = *frame;
    }
    auto code = objects_.read_word(c.frame + o.frame_code);
    auto instr = objects_.read_word(c.frame + o.frame_instr);
    if (!code || !instr || *code == 0) break;
    c.code = objects_.untag(*code);
    c.instr = layout_.frame_model == FrameModel::frame_object
                  ? static_cast<std::uint64_t>(low32(*instr))
                  : *instr;
    if (layout_.frame_model == FrameModel::frame_object)
      created = static_cast<std::int64_t>(c.instr) < 0;
    outer_first.push_back(c);
    coro = created ? 0 : awaited(c.frame);
  }
  std::reverse(outer_first.begin(), outer_first.end());
  return outer_first;
}

std::uint64_t AsyncioReader::awaited(std::uint64_t frame) {
  auto top = objects_.read_word(frame + async_.frame_stacktop);
  if (!top) return 0;
  std::optional<std::uint64_t> value;
  switch (async_.stack) {
    case StackModel::pointer:
      if (*top != 0) value = objects_.read_word(*top - 8);
      break;
    case StackModel::depth: {
      auto base = objects_.read_word(frame + async_.frame_valuestack);
      if (base && low32(*top) > 0)
        value = objects_.read_word(*base + 8 * static_cast<std::uint64_t>(low32(*top) - 1));
      break;
    }
    case StackModel::index:
      if (low32(*top) > 0)
        value = objects_.read_word(frame + static_cast<std::uint64_t>(async_.frame_valuestack) +
                                   8 * static_cast<std::uint64_t>(low32(*top) - 1));
      break;
    case StackModel::tagged:
      if (*top > frame) value = objects_.read_word(*top - 8);
      if (value) value = objects_.untag(*value);
      break;
  }
  return value.value_or(0);
}

std::vector<AsyncioTask> PythonReader::asyncio_tasks(const RawPythonState& raw, MemoryReader& mem) {
  std::vector<AsyncioTask> out;
  asyncio_missing_.clear();
  // The generated rows are of default builds: a free-threaded one (larger PyObject_HEAD) is
  // read only through the offsets its _asyncio publishes (3.14t).
  auto async = where_.asyncio                ? where_.asyncio
               : where_.layout.free_threaded ? std::nullopt
                                             : asyncio_layout(where_.layout.minor);
  if (!async) {
    asyncio_missing_ =
        !where_.asyncio_missing.empty()
            ? where_.asyncio_missing
            : fmt::format("asyncio tasks are not read on CPython {}{}", where_.version,
                          where_.layout.free_threaded ? " (free-threaded)" : "");
    return out;
  }
  ObjectReader objects(mem, where_.layout);
  AsyncioReader reader(objects, where_.layout, *async);
  std::vector<std::uint64_t> tstates;
  for (const auto& t : raw.threads) tstates.push_back(t.tstate);
  for (std::uint64_t interp : raw.interpreters) {
    auto read = reader.read(interp, tstates);
    if (!read) {
      asyncio_missing_ = read.error().message;
      continue;
    }
    if (!read->note.empty()) asyncio_missing_ = std::move(read->note);
    for (auto& t : read->tasks) {
      AsyncioTask task;
      task.name = std::move(t.name);
      task.address = t.address;
      task.awaits = std::move(t.awaits);
      task.awaits_task = std::move(t.awaits_task);
      for (const auto& c : t.coroutines) {
        const CodeInfo& info = code_info(mem, c.code);
        if (!info.valid) continue;
        Frame f;
        f.kind = FrameKind::python;
        f.function = info.function;
        f.file = info.file;
        RawPythonFrame rf;
        rf.frame_addr = c.frame;
        rf.code_addr = c.code;
        rf.instr = c.instr;
        frame_position(info, rf, f);
        task.coroutines.push_back(std::move(f));
      }
      out.push_back(std::move(task));
    }
  }
  return out;
}

}  // namespace hangscan::python
