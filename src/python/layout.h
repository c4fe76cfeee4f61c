// PyLayout: everything hangscan needs to know about one CPython minor version's memory layout.
//
// Why: version knowledge is data (design principle 6). The walker and decoder follow offsets
// from one PyLayout and never test version numbers themselves. Rows for 3.6-3.12 are generated
// from the CPython headers (tools/gen_python_offsets.py -> offsets_table.cpp); for 3.13+ a row
// is built at run time from the _Py_DebugOffsets the target carries (debug_offsets.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hangscan::python {

// How a thread's frames are reached and what a frame is.
enum class FrameModel {
  frame_object,      // 3.6-3.10: tstate->frame, PyFrameObject chained by f_back, int f_lasti
  interp_frame_311,  // 3.11: tstate->cframe->current_frame, is_entry flag, prev_instr
  interp_frame_312,  // 3.12: as 3.11, C-stack shim frames (owner) mark eval-call boundaries
  interp_frame_313,  // 3.13+: tstate->current_frame, f_executable, instr_ptr
};

// Which encoding co_lnotab / co_linetable uses.
enum class LineTable {
  lnotab,        // < 3.10: (addr delta, line delta) byte pairs
  linetable310,  // 3.10: (length, line delta) byte pairs, -128 = no line
  location311,   // 3.11+: PEP 657 location table
};

// Byte offsets of the fields hangscan follows; -1 where the version has no such field.
struct PyOffsets {
  std::int64_t runtime_interpreters_head = -1;  // _PyRuntimeState.interpreters.head
  std::int64_t runtime_gil = -1;                // _PyRuntimeState.ceval.gil (3.7-3.11)
  std::int64_t interp_next = -1;
  std::int64_t interp_threads_head = -1;
  std::int64_t interp_gil_ptr = -1;  // PyInterpreterState.ceval.gil (pointer, 3.12+)
  std::int64_t gil_locked = -1;      // in struct _gil_runtime_state
  std::int64_t gil_last_holder = -1;
  std::int64_t tstate_next = -1;
  std::int64_t tstate_interp = -1;
  std::int64_t tstate_frame = -1;             // frame / cframe / current_frame
  std::int64_t tstate_thread_id = -1;         // pthread_t
  std::int64_t tstate_native_thread_id = -1;  // kernel tid (3.11+)
  std::int64_t cframe_current_frame = -1;     // _PyCFrame.current_frame (3.11-3.12)
  std::int64_t cframe_previous = -1;          // _PyCFrame.previous (3.11-3.12)
  std::int64_t frame_previous = -1;           // f_back / previous
  std::int64_t frame_code = -1;               // f_code / f_executable
  std::int64_t frame_instr = -1;              // f_lasti (int) / prev_instr / instr_ptr
  std::int64_t frame_localsplus = -1;
  std::int64_t frame_owner = -1;     // char
  std::int64_t frame_is_entry = -1;  // bool (3.11)
  std::int64_t code_filename = -1;
  std::int64_t code_name = -1;
  std::int64_t code_qualname = -1;
  std::int64_t code_firstlineno = -1;      // int
  std::int64_t code_linetable = -1;        // co_lnotab / co_linetable (bytes)
  std::int64_t code_adaptive = -1;         // co_code_adaptive (inline bytecode, 3.11+)
  std::int64_t code_varnames = -1;         // co_varnames / co_localsplusnames (tuple)
  std::int64_t code_localspluskinds = -1;  // bytes (3.11+)
  std::int64_t code_nlocals = -1;          // int co_nlocals / co_nlocalsplus; -1: tuple size
  std::int64_t object_type = -1;
  std::int64_t type_name = -1;  // tp_name (char*)
  std::int64_t unicode_length = -1;
  std::int64_t unicode_state = -1;
  std::int64_t unicode_ascii_size = -1;    // sizeof(PyASCIIObject): compact ASCII data
  std::int64_t unicode_compact_size = -1;  // sizeof(PyCompactUnicodeObject)
  std::int64_t bytes_size = -1;
  std::int64_t bytes_data = -1;
  std::int64_t tuple_size = -1;
  std::int64_t tuple_items = -1;
  std::int64_t list_size = -1;
  std::int64_t list_items = -1;  // PyObject** ob_item
  std::int64_t float_value = -1;
  std::int64_t long_size = -1;  // ob_size (signed) or lv_tag (3.12+)
  std::int64_t long_digits = -1;
  std::int64_t interp_gil = -1;  // PyInterpreterState._gil, embedded (3.13+)
  // Thread names, container values, interpreter state (generated too; 3.13+: from the 3.13
  // headers where _Py_DebugOffsets lacks them).
  std::int64_t interp_modules = -1;         // sys.modules (modules / imports.modules)
  std::int64_t runtime_finalizing = -1;     // _PyRuntime.finalizing: the finalizing tstate
  std::int64_t runtime_gc_collecting = -1;  // _PyRuntime.gc.collecting (3.7-3.8, int)
  std::int64_t interp_gc_collecting = -1;   // interp->gc.collecting (3.9+, int)
  std::int64_t dict_keys = -1;              // PyDictObject.ma_keys
  std::int64_t dict_values = -1;            // PyDictObject.ma_values (split tables)
  std::int64_t keys_size = -1;              // dk_size (<3.11) or dk_log2_size (uint8)
  std::int64_t keys_kind = -1;              // dk_kind (uint8, 3.11+): 0 general entries
  std::int64_t keys_nentries = -1;
  std::int64_t keys_indices = -1;
  std::int64_t values_items = -1;  // PyDictValues.values (0 before 3.13)
  std::int64_t type_basicsize = -1;
  std::int64_t type_dictoffset = -1;
  std::int64_t type_flags = -1;
  std::int64_t heaptype_cached_keys = -1;  // PyHeapTypeObject.ht_cached_keys
  std::int64_t set_used = -1;
  std::int64_t set_mask = -1;
  std::int64_t set_table = -1;
  std::int64_t module_dict = -1;  // PyModuleObject.md_dict
  // Coroutines (3.14+ from _Py_DebugOffsets; older versions: AsyncioLayout rows).
  std::int64_t gen_iframe = -1;          // PyGenObject.gi_iframe (embedded frame)
  std::int64_t gen_frame_state = -1;     // PyGenObject.gi_frame_state (int8)
  std::int64_t frame_stackpointer = -1;  // _PyInterpreterFrame.stackpointer (_PyStackRef*)
  std::int64_t interp_size = -1;         // sizeof(PyInterpreterState)
  // sizeof(PyObject): 16, or 32 in free-threaded builds (ob_tid, ob_ref_local, ob_ref_shared
  // come before ob_type); fields that follow PyObject_HEAD are at this offset.
  std::int64_t object_head = 16;
  std::int64_t frame_tlbc_index = -1;  // _PyInterpreterFrame.tlbc_index (int32, 3.14t)
  std::int64_t code_tlbc = -1;         // PyCodeObject.co_tlbc (_PyCodeArray*, 3.14t)
};

// Where an instance keeps its attributes (Thread._name).
enum class InstanceDict {
  dict_offset,  // < 3.11: a dict pointer at tp_dictoffset
  managed_311,  // 3.11: values pointer at -4 words, dict pointer at -3 words
  managed_312,  // 3.12: one word at -3: a dict, or values tagged with bit 0 (value - 1)
  inline_313,   // 3.13+: dict pointer at -3 words, else values inline at tp_basicsize
};

struct PyLayout {
  int major = 3;
  int minor = 0;
  std::string source;  // where the offsets came from (build + header dir, or target)
  FrameModel frame_model = FrameModel::frame_object;
  LineTable line_table = LineTable::lnotab;
  int lasti_scale = 1;       // frame_object: bytes per f_lasti unit (3.10 counts code units)
  bool stackref = false;     // 3.14+: f_executable and locals are tagged _PyStackRef
  bool long_tagged = false;  // 3.12+: PyLongObject uses lv_tag instead of ob_size
  int shim_owner = -1;       // owner value of C-stack entry shims (3.12+); -1: none
  PyOffsets off;
  InstanceDict instance_dict = InstanceDict::dict_offset;  // set from the minor version
  bool free_threaded = false;  // a 3.13t/3.14t build (Py_GIL_DISABLED; _Py_DebugOffsets says)
};

// The instance attribute model of a minor version.
InstanceDict instance_dict_model(int minor);

// The fields _Py_DebugOffsets lacks, from the 3.13 headers (offsets_table.cpp); nullptr when
// the table was generated without a 3.13 build.
const PyOffsets* debug_offsets_extra();

// The generated rows (offsets_table.cpp), one per minor version 3.6-3.12.
const std::vector<PyLayout>& builtin_layouts();

// The row for a version, nullopt when the version needs _Py_DebugOffsets or is unknown.
std::optional<PyLayout> builtin_layout(int major, int minor);

// "3.6 to 3.12 (tables), 3.13+ (_Py_DebugOffsets)" for messages.
std::string supported_versions();

}  // namespace hangscan::python
