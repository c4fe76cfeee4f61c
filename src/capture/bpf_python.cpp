#include "capture/bpf_python.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hangscan {

Result<hs_py_proc> py_proc_of(const python::Located& where) {
  const python::PyLayout& l = where.layout;
  const python::PyOffsets& o = l.off;
  auto unsupported = [&](const char* why) {
    return Error(
        Errc::unsupported,
        fmt::format("Python {}: the BPF frame walker cannot read it ({})", where.version, why));
  };
  if (o.frame_tlbc_index >= 0) return unsupported("a free-threaded build");
  if (where.interp_head_ptr == 0 || o.interp_threads_head < 0 || o.tstate_next < 0 ||
      o.tstate_frame < 0 || o.frame_previous < 0 || o.frame_code < 0 || o.frame_instr < 0 ||
      (o.tstate_native_thread_id < 0 && o.tstate_thread_id < 0) ||
      (l.shim_owner >= 0 && o.frame_owner < 0))
    return unsupported("its layout lacks a field the walk needs");
  bool objects = l.frame_model == python::FrameModel::frame_object;
  std::int64_t end =
      std::max({o.frame_previous + 8, o.frame_code + 8, o.frame_instr + (objects ? 4 : 8),
                l.shim_owner >= 0 ? o.frame_owner + 1 : 0,
                o.frame_is_entry >= 0 ? o.frame_is_entry + 1 : 0});
  if (end > HS_PY_HEADER) return unsupported("frame fields beyond the bytes read at once");
  auto i32 = [](std::int64_t v) { return static_cast<hs_s32>(v); };
  hs_py_proc p{};
  p.interp_head_ptr = where.interp_head_ptr;
  p.interp_threads_head = i32(o.interp_threads_head);
  p.tstate_next = i32(o.tstate_next);
  p.tstate_frame = i32(o.tstate_frame);
  p.tstate_thread_id = i32(o.tstate_thread_id);
  p.tstate_native_thread_id = i32(o.tstate_native_thread_id);
  p.cframe_current_frame = i32(o.cframe_current_frame);
  p.cframe_previous = l.shim_owner < 0 ? i32(o.cframe_previous) : -1;  // 3.11's markers
  p.frame_previous = i32(o.frame_previous);
  p.frame_code = i32(o.frame_code);
  p.frame_instr = i32(o.frame_instr);
  p.frame_owner = i32(o.frame_owner);
  p.frame_is_entry = i32(o.frame_is_entry);
  p.shim_owner = l.shim_owner;
  p.header_len = static_cast<hs_u32>(end);
  p.flags = (objects ? HS_PY_FRAME_OBJECT : 0) | (l.stackref ? HS_PY_STACKREF : 0);
  return p;
}

std::optional<python::RawPythonThread> python_of(const hs_py_stack& py) {
  if (py.status == HS_PY_NO_THREAD) return std::nullopt;
  python::RawPythonThread t;
  std::size_t n = std::min<std::size_t>(py.nframes, HS_PY_FRAMES);
  for (std::size_t i = 0; i < n; ++i) {
    python::RawPythonFrame& f = t.frames.emplace_back();
    f.code_addr = py.f[i].code;
    f.instr = py.f[i].instr;
    f.eval_marker = py.f[i].marker;
    f.is_entry = ((py.entries[i / 64] >> (i % 64)) & 1) != 0;
  }
  if (py.status == HS_PY_UNREADABLE)
    t.error = "a Python frame could not be read at the sample: the chain is cut there";
  else if (py.status == HS_PY_CUT)
    t.error = fmt::format("more than {} Python frames at the sample: the outer ones are missing",
                          HS_PY_FRAMES);
  if (py.ncalls > 0) {
    std::size_t k = std::min<std::size_t>(py.ncalls, HS_PY_CALLS);
    python::pair_cframes(t, std::vector<std::uint64_t>(py.calls, py.calls + k));
  }
  return t;
}

}  // namespace hangscan
