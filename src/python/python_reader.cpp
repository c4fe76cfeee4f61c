#include "python/python_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "python/code_positions.h"
#include "python/thread_names.h"
#include "python/value_repr.h"

namespace hangscan::python {
namespace {

constexpr std::size_t kMaxCodeCache = 65536;
constexpr std::uint64_t kMaxTid = 1 << 22;  // pid_max limit on Linux
// glibc x86-64: pthread_t is the struct pthread, which starts with a TCB whose `tcb` (offset
// 0) and `self` (offset 16) point to itself, and holds the kernel tid at 0x2d0 (glibc 2.26 to
// 2.36 at least). Lets versions without native_thread_id be matched without a freeze.
constexpr std::uint64_t kTcbSelfOffset = 16;
constexpr std::uint64_t kPthreadTidOffset = 0x2d0;

// The kernel tid of a glibc pthread_t, nullopt when `pthread` does not look like a glibc TCB.
std::optional<int> tid_from_pthread(MemoryReader& mem, std::uint64_t pthread) {
  std::uint64_t tcb = 0;
  std::uint64_t self = 0;
  std::int32_t tid = 0;
  if (pthread == 0 || !mem.read_obj(pthread, tcb) || tcb != pthread ||
      !mem.read_obj(pthread + kTcbSelfOffset, self) || self != pthread ||
      !mem.read_obj(pthread + kPthreadTidOffset, tid) || tid <= 0 ||
      static_cast<std::uint64_t>(tid) >= kMaxTid)
    return std::nullopt;
  return tid;
}

template <class T>
T load(const std::vector<std::uint8_t>& buf, std::int64_t off) {
  T v{};
  if (off >= 0 && static_cast<std::size_t>(off) + sizeof(T) <= buf.size())
    std::memcpy(&v, buf.data() + off, sizeof(T));
  return v;
}

// How many bytes of a frame to copy so that every header field is in one read.
std::size_t frame_header_size(const PyOffsets& o) {
  std::int64_t m = std::max({o.frame_previous, o.frame_code, o.frame_instr, o.frame_owner,
                             o.frame_is_entry, o.frame_tlbc_index});
  return static_cast<std::size_t>(m + 8);
}

// 3.14t: index 0 is the code object's own co_code_adaptive; a thread that specialized the code
// runs its own copy, entries[index] of the _PyCodeArray {Py_ssize_t size; char *entries[]} at
// co_tlbc. 0 when the index is 0; kUnresolvedBytecode when the copy cannot be found (then no
// line is shown rather than a wrong one).
std::uint64_t tlbc_bytecode(MemoryReader& mem, const PyOffsets& o, std::uint64_t code,
                            std::int32_t index) {
  constexpr std::int32_t kMaxTlbc = 4096;
  std::uint64_t array = 0;
  std::int64_t size = 0;
  std::uint64_t entry = 0;
  if (index == 0) return 0;
  if (index < 0 || index > kMaxTlbc || o.code_tlbc < 0 ||
      !mem.read_obj(code + static_cast<std::uint64_t>(o.code_tlbc), array) || array == 0 ||
      !mem.read_obj(array, size) || index >= size ||
      !mem.read_obj(array + 8 + 8 * static_cast<std::uint64_t>(index), entry) || entry == 0)
    return kUnresolvedBytecode;
  return entry;
}

std::size_t tstate_header_size(const PyOffsets& o) {
  std::int64_t m =
      std::max({o.tstate_next, o.tstate_frame, o.tstate_thread_id, o.tstate_native_thread_id});
  return static_cast<std::size_t>(m + 8);
}

}  // namespace

PythonReader::GilState PythonReader::read_gil(MemoryReader& mem, const RuntimeRoots& rt,
                                              std::uint64_t interp) {
  const PyOffsets& o = where_.layout.off;
  GilState g;
  std::uint64_t gil = 0;
  if (o.interp_gil >= 0) {
    gil = interp + o.interp_gil;
  } else if (o.interp_gil_ptr >= 0) {
    if (!mem.read_obj(interp + o.interp_gil_ptr, gil)) return g;
  } else if (rt.gil_struct != 0) {
    gil = rt.gil_struct;
  } else if (rt.gil_current_ptr != 0) {
    // 3.6: _PyThreadState_Current is non-NULL exactly while a thread holds the GIL.
    mem.read_obj(rt.gil_current_ptr, g.holder);
    if (rt.gil_last_holder_ptr != 0) mem.read_obj(rt.gil_last_holder_ptr, g.last_holder);
    return g;
  }
  if (gil == 0 || o.gil_locked < 0 || o.gil_last_holder < 0) return g;
  std::int32_t locked = 0;
  std::uint64_t holder = 0;
  if (!mem.read_obj(gil + o.gil_last_holder, holder)) return g;
  g.last_holder = holder;
  if (mem.read_obj(gil + o.gil_locked, locked) && locked != 0) g.holder = holder;
  return g;
}

bool PythonReader::gc_collecting(MemoryReader& mem, const RuntimeRoots& rt, std::uint64_t interp) {
  const PyOffsets& o = where_.layout.off;
  std::int32_t flag = 0;
  if (o.interp_gc_collecting >= 0) {
    if (!mem.read_obj(interp + o.interp_gc_collecting, flag)) return false;
  } else if (rt.gc_collecting_ptr == 0 || !mem.read_obj(rt.gc_collecting_ptr, flag)) {
    return false;
  }
  return flag != 0;
}

RawPythonState PythonReader::walk(MemoryReader& mem, bool with_locals) {
  RawPythonState st;
  ObjectReader objects(mem, where_.layout);
  walk_budget_ = kMaxTotalFrames;
  walk_runtime(mem, where_, with_locals ? &objects : nullptr, st);
  for (const auto& rt : where_.more_runtimes)
    walk_runtime(mem, rt, with_locals ? &objects : nullptr, st);
  if (walk_budget_ == 0)
    st.diagnostics.push_back(fmt::format(
        "more than {} Python frames in the process: the walk was cut", kMaxTotalFrames));
  return st;
}

void PythonReader::walk_runtime(MemoryReader& mem, const RuntimeRoots& rt, ObjectReader* objects,
                                RawPythonState& st) {
  const PyOffsets& o = where_.layout.off;
  std::uint64_t interp = 0;
  if (!mem.read_obj(rt.interp_head_ptr, interp)) {
    st.diagnostics.push_back(
        fmt::format("cannot read the interpreter list head at {:#x}", rt.interp_head_ptr));
    return;
  }
  std::uint64_t finalizing = 0;
  if (rt.finalizing_ptr != 0 && mem.read_obj(rt.finalizing_ptr, finalizing) && finalizing != 0)
    st.finalizing = finalizing;
  std::set<std::uint64_t> seen_interps;
  while (interp != 0) {
    if (st.interpreters.size() >= kMaxInterpreters || !seen_interps.insert(interp).second) {
      st.diagnostics.push_back("interpreter list loops or is implausibly long: cut");
      break;
    }
    st.interpreters.push_back(interp);
    GilState gil = read_gil(mem, rt, interp);
    // The collector runs with the GIL held; while a finalizer it called waits with the GIL
    // released, the collector is the thread that took the GIL last.
    std::uint64_t collector = 0;
    bool collecting = gc_collecting(mem, rt, interp);
    if (collecting) {
      st.gc_collecting = true;
      collector = gil.holder != 0 ? gil.holder : gil.last_holder;
    }
    std::uint64_t tstate = 0;
    if (!mem.read_obj(interp + o.interp_threads_head, tstate)) {
      st.diagnostics.push_back(fmt::format("cannot read the threads of interpreter {:#x}", interp));
      break;
    }
    std::set<std::uint64_t> seen_threads;
    const std::size_t first_thread = st.threads.size();
    while (tstate != 0) {
      if (st.threads.size() >= kMaxThreads || !seen_threads.insert(tstate).second) {
        st.diagnostics.push_back("thread state list loops or is implausibly long: cut");
        break;
      }
      RawPythonThread t;
      t.tstate = tstate;
      auto next = walk_thread(mem, objects, tstate, t);
      t.holds_gil = gil.holder == tstate;
      t.gc_collecting = collector == tstate;
      st.threads.push_back(std::move(t));
      if (!next) {
        st.diagnostics.push_back(
            fmt::format("thread state {:#x} vanished during the walk: list cut", tstate));
        break;
      }
      tstate = *next;
    }
    // Without a GIL record (3.6 creates the GIL with the second thread), a lone thread state
    // is the one collecting.
    if (collecting && collector == 0 && st.threads.size() == first_thread + 1)
      st.threads.back().gc_collecting = true;
    if (!mem.read_obj(interp + o.interp_next, interp)) break;
  }
}

std::optional<std::uint64_t> PythonReader::walk_thread(MemoryReader& mem, ObjectReader* objects,
                                                       std::uint64_t tstate, RawPythonThread& out) {
  const PyLayout& l = where_.layout;
  const PyOffsets& o = l.off;
  // One read for every thread-state field (the pause is counted in reads).
  std::vector<std::uint8_t> ts(tstate_header_size(o));
  if (!mem.read_exact(tstate, ts.data(), ts.size())) {
    out.error = fmt::format("cannot read thread state {:#x}", tstate);
    return std::nullopt;
  }
  std::uint64_t next = load<std::uint64_t>(ts, o.tstate_next);
  out.pthread_id = load<std::uint64_t>(ts, o.tstate_thread_id);
  if (o.tstate_native_thread_id >= 0) {
    std::uint64_t tid = load<std::uint64_t>(ts, o.tstate_native_thread_id);
    if (tid > 0 && tid < kMaxTid) out.native_tid = static_cast<int>(tid);
  } else {
    out.native_tid = tid_from_pthread(mem, out.pthread_id);
  }
  std::uint64_t frame = load<std::uint64_t>(ts, o.tstate_frame);
  if (o.cframe_current_frame >= 0 && frame != 0 &&
      !mem.read_obj(frame + o.cframe_current_frame, frame)) {
    out.error = fmt::format("cannot read the current frame of thread state {:#x}", tstate);
    return next;
  }
  const std::size_t header = frame_header_size(o);
  std::vector<std::uint8_t> buf(header);
  std::set<std::uint64_t> seen;
  while (frame != 0) {
    if (out.frames.size() >= kMaxFrames) {
      out.error = fmt::format("more than {} Python frames: cut", kMaxFrames);
      break;
    }
    if (!seen.insert(frame).second) {
      out.error = fmt::format("Python frame chain loops at {:#x}: cut", frame);
      break;
    }
    if (seen.size() > kMaxFrames * 2) {
      out.error = "too many non-code frames: cut";
      break;
    }
    if (walk_budget_ == 0) {
      out.error = fmt::format("more than {} Python frames in the process: cut", kMaxTotalFrames);
      break;
    }
    --walk_budget_;
    if (!mem.read_exact(frame, buf.data(), header)) {
      out.error = fmt::format("cannot read Python frame at {:#x}: chain cut", frame);
      break;
    }
    std::uint64_t prev = load<std::uint64_t>(buf, o.frame_previous);
    std::uint64_t code = load<std::uint64_t>(buf, o.frame_code);
    if (l.stackref) code &= ~std::uint64_t{3};
    if (l.shim_owner >= 0) {
      auto owner = load<std::int8_t>(buf, o.frame_owner);
      if (owner >= l.shim_owner) {
        // A C-stack shim: not Python code, but the boundary of one eval-loop call.
        if (owner == l.shim_owner && !out.frames.empty()) {
          out.frames.back().is_entry = true;
          out.frames.back().eval_marker = frame;  // the shim lives on the eval loop's C stack
        }
        frame = prev;
        continue;
      }
    }
    RawPythonFrame f;
    f.frame_addr = frame;
    f.code_addr = code;
    if (l.frame_model == FrameModel::frame_object) {
      f.instr = static_cast<std::uint64_t>(
          static_cast<std::int64_t>(load<std::int32_t>(buf, o.frame_instr)));
      f.is_entry = true;  // every PyFrameObject is run by its own eval-loop call
    } else {
      f.instr = load<std::uint64_t>(buf, o.frame_instr);
      f.is_entry = o.frame_is_entry >= 0 && load<std::uint8_t>(buf, o.frame_is_entry) != 0;
      if (o.frame_tlbc_index >= 0 && code != 0)
        f.bytecode = tlbc_bytecode(mem, o, code, load<std::int32_t>(buf, o.frame_tlbc_index));
    }
    if (code != 0) {
      if (objects != nullptr) read_locals(mem, *objects, frame, code, f);
      out.frames.push_back(std::move(f));
    }
    frame = prev;
  }
  if (o.cframe_previous >= 0 && l.shim_owner < 0)
    mark_cframes(mem, load<std::uint64_t>(ts, o.tstate_frame), out);
  return next;
}

void PythonReader::mark_cframes(MemoryReader& mem, std::uint64_t cframe, RawPythonThread& out) {
  // Every eval-loop call links one _PyCFrame (a local of the call) in front of the thread's
  // chain; the chain ends at the thread state's root _PyCFrame, whose previous is null.
  std::vector<std::uint64_t> calls;
  while (cframe != 0 && calls.size() <= out.frames.size()) {
    std::uint64_t previous = 0;
    if (!mem.read_obj(cframe + where_.layout.off.cframe_previous, previous)) return;
    if (previous == 0) break;
    calls.push_back(cframe);
    cframe = previous;
  }
  pair_cframes(out, calls);
}

void pair_cframes(RawPythonThread& t, const std::vector<std::uint64_t>& calls) {
  std::size_t entries = 0;
  for (const auto& f : t.frames) entries += f.is_entry ? 1 : 0;
  if (entries != calls.size() || !t.error.empty()) return;  // no sure pairing: names decide
  std::size_t k = 0;
  for (auto& f : t.frames)
    if (f.is_entry) f.eval_marker = calls[k++];
}

void PythonReader::read_locals(MemoryReader& mem, ObjectReader& objects, std::uint64_t frame,
                               std::uint64_t code, RawPythonFrame& out) {
  const PyOffsets& o = where_.layout.off;
  std::uint64_t names_tuple = 0;
  if (!mem.read_obj(code + o.code_varnames, names_tuple)) return;
  auto names = objects.tuple_items(names_tuple);
  if (!names) return;
  std::size_t count = names->size();
  if (o.code_nlocals >= 0) {
    std::int32_t n = 0;
    if (!mem.read_obj(code + o.code_nlocals, n) || n < 0) return;
    count = std::min(count, static_cast<std::size_t>(n));
  }
  count = std::min(count, kMaxLocals);
  std::vector<std::uint64_t> values(count);
  if (!mem.read_exact(frame + o.frame_localsplus, values.data(), count * 8)) return;
  ValueRenderer render(objects, where_.layout, where_.torch);
  for (std::size_t i = 0; i < count; ++i) {
    if (objects.untag(values[i]) == 0) continue;  // unbound
    auto name = objects.read_str((*names)[i], 256);
    if (!name) continue;
    out.locals.push_back(Local{*name, render.render(values[i])});
  }
}

const PythonReader::CodeInfo& PythonReader::code_info(MemoryReader& mem, std::uint64_t code) {
  if (auto it = code_cache_.find(code); it != code_cache_.end()) return it->second;
  if (code_cache_.size() >= kMaxCodeCache) code_cache_.clear();
  const PyOffsets& o = where_.layout.off;
  ObjectReader objects(mem, where_.layout);
  CodeInfo info;
  auto type = objects.type_name(code);
  std::uint64_t name_obj = 0;
  std::uint64_t file_obj = 0;
  std::uint64_t table_obj = 0;
  std::int32_t first = 0;
  if (!type) {
    info.error = fmt::format("code object at {:#x} unreadable", code);
  } else if (*type != "code") {
    info.error = fmt::format("frame runs a {} at {:#x}, not a code object", *type, code);
  } else if (!mem.read_obj(code + (o.code_qualname >= 0 ? o.code_qualname : o.code_name),
                           name_obj) ||
             !mem.read_obj(code + o.code_filename, file_obj) ||
             !mem.read_obj(code + o.code_firstlineno, first) ||
             !mem.read_obj(code + o.code_linetable, table_obj)) {
    info.error = fmt::format("code object at {:#x} unreadable", code);
  } else {
    auto name = objects.read_str(name_obj);
    auto file = objects.read_str(file_obj);
    auto table = objects.read_bytes(table_obj);
    if (!name || !file) {
      info.error = fmt::format("names of code object {:#x} unreadable", code);
    } else {
      info.valid = true;
      info.function = *name;
      info.file = *file;
      info.firstlineno = first;
      if (table) info.linetable = std::move(*table);
    }
  }
  return code_cache_.emplace(code, std::move(info)).first->second;
}

void PythonReader::frame_position(const CodeInfo& info, const RawPythonFrame& f, Frame& out) const {
  const PyLayout& l = where_.layout;
  std::uint64_t offset = 0;
  if (l.frame_model == FrameModel::frame_object) {
    auto lasti = static_cast<std::int64_t>(f.instr);
    if (lasti < 0) {  // not started yet
      out.line = info.firstlineno;
      return;
    }
    offset = static_cast<std::uint64_t>(lasti) * static_cast<std::uint64_t>(l.lasti_scale);
  } else {
    if (f.bytecode == kUnresolvedBytecode) return;  // 3.14t copy not found: no line
    std::uint64_t start = f.bytecode != 0
                              ? f.bytecode
                              : f.code_addr + static_cast<std::uint64_t>(l.off.code_adaptive);
    if (f.instr < start) {
      out.line = info.firstlineno;
      return;
    }
    offset = f.instr - start;
  }
  if (l.line_table != LineTable::location311) {
    out.line = addr_to_line(l.line_table, info.linetable, info.firstlineno, offset);
    return;
  }
  auto pos = location_table_position(info.linetable, info.firstlineno, offset);
  if (!pos) return;
  out.line = pos->line;
  if (pos->column) {
    out.column = pos->column;
    out.end_line = pos->end_line;
    out.end_column = pos->end_column;
  }
}

std::vector<PythonThreadStack> PythonReader::decode(const RawPythonState& raw, MemoryReader& mem) {
  std::vector<PythonThreadStack> out;
  out.reserve(raw.threads.size());
  ObjectReader objects(mem, where_.layout);
  std::map<std::uint64_t, std::string> names;
  names_missing_.clear();
  for (std::uint64_t interp : raw.interpreters) {
    auto found = read_thread_names(objects, where_.layout, interp);
    if (!found) {
      if (names_missing_.empty()) names_missing_ = found.error().message;
      continue;
    }
    names.merge(*found);
  }
  if (!names.empty()) names_missing_.clear();
  for (const auto& t : raw.threads) {
    PythonThreadStack s;
    if (auto it = names.find(t.pthread_id); it != names.end() && t.pthread_id != 0)
      s.name = it->second;
    s.gc_collecting = t.gc_collecting;
    s.finalizing = raw.finalizing != 0 && raw.finalizing == t.tstate;
    s.native_tid = t.native_tid;
    s.pthread_id = t.pthread_id;
    s.gil = t.holds_gil;
    s.idle = t.frames.empty() && !s.finalizing;  // finalizing: busy, just not in Python
    if (!t.error.empty()) s.notes.push_back(t.error);
    for (const auto& f : t.frames) {
      const CodeInfo& info = code_info(mem, f.code_addr);
      if (!info.valid) {
        s.notes.push_back(info.error);
        // Keep the count of eval-loop calls right for the merge: the inner frame inherits it.
        if (f.is_entry && !s.frames.empty()) {
          s.frames.back().entry = true;
          s.frames.back().eval_marker = f.eval_marker;
        }
        continue;
      }
      PythonFrame pf;
      pf.entry = f.is_entry;
      pf.eval_marker = f.eval_marker;
      pf.frame.kind = FrameKind::python;
      pf.frame.function = info.function;
      pf.frame.file = info.file;
      frame_position(info, f, pf.frame);
      pf.frame.locals = f.locals;
      s.frames.push_back(std::move(pf));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace hangscan::python
