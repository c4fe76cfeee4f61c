#include "python/debug_offsets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace hangscan::python {
namespace {

// Field order of _Py_DebugOffsets after the cookie. Source: Include/internal/pycore_runtime.h
// of 3.13.0 (pyenv build) and Include/internal/pycore_debug_offsets.h of 3.14.
std::vector<std::string> fields_313() {
  return {
      "version",
      "free_threaded",
      "runtime_state.size",
      "runtime_state.finalizing",
      "runtime_state.interpreters_head",
      "interpreter_state.size",
      "interpreter_state.id",
      "interpreter_state.next",
      "interpreter_state.threads_head",
      "interpreter_state.gc",
      "interpreter_state.imports_modules",
      "interpreter_state.sysdict",
      "interpreter_state.builtins",
      "interpreter_state.ceval_gil",
      "interpreter_state.gil_runtime_state",
      "interpreter_state.gil_runtime_state_enabled",
      "interpreter_state.gil_runtime_state_locked",
      "interpreter_state.gil_runtime_state_holder",
      "thread_state.size",
      "thread_state.prev",
      "thread_state.next",
      "thread_state.interp",
      "thread_state.current_frame",
      "thread_state.thread_id",
      "thread_state.native_thread_id",
      "thread_state.datastack_chunk",
      "thread_state.status",
      "interpreter_frame.size",
      "interpreter_frame.previous",
      "interpreter_frame.executable",
      "interpreter_frame.instr_ptr",
      "interpreter_frame.localsplus",
      "interpreter_frame.owner",
      "code_object.size",
      "code_object.filename",
      "code_object.name",
      "code_object.qualname",
      "code_object.linetable",
      "code_object.firstlineno",
      "code_object.argcount",
      "code_object.localsplusnames",
      "code_object.localspluskinds",
      "code_object.co_code_adaptive",
      "pyobject.size",
      "pyobject.ob_type",
      "type_object.size",
      "type_object.tp_name",
      "type_object.tp_repr",
      "type_object.tp_flags",
      "tuple_object.size",
      "tuple_object.ob_item",
      "tuple_object.ob_size",
      "list_object.size",
      "list_object.ob_item",
      "list_object.ob_size",
      "dict_object.size",
      "dict_object.ma_keys",
      "dict_object.ma_values",
      "float_object.size",
      "float_object.ob_fval",
      "long_object.size",
      "long_object.lv_tag",
      "long_object.ob_digit",
      "bytes_object.size",
      "bytes_object.ob_size",
      "bytes_object.ob_sval",
      "unicode_object.size",
      "unicode_object.state",
      "unicode_object.length",
      "unicode_object.asciiobject_size",
      "gc.size",
      "gc.collecting",
  };
}

// 3.14 inserted fields inside several sub-structs and appended new ones.
std::vector<std::string> fields_314() {
  std::vector<std::string> f = fields_313();
  auto insert_after = [&f](const std::string& after, std::vector<std::string> add) {
    auto it = std::find(f.begin(), f.end(), after);
    f.insert(it + 1, add.begin(), add.end());
  };
  insert_after("interpreter_state.threads_head", {"interpreter_state.threads_main"});
  insert_after("interpreter_state.gil_runtime_state_holder",
               {"interpreter_state.code_object_generation", "interpreter_state.tlbc_generation"});
  insert_after("interpreter_frame.owner",
               {"interpreter_frame.stackpointer", "interpreter_frame.tlbc_index"});
  insert_after("code_object.co_code_adaptive", {"code_object.co_tlbc"});
  insert_after("list_object.ob_size",
               {"set_object.size", "set_object.used", "set_object.table", "set_object.mask"});
  for (const char* n :
       {"gen_object.size", "gen_object.gi_name", "gen_object.gi_iframe",
        "gen_object.gi_frame_state", "llist_node.next", "llist_node.prev",
        "debugger_support.eval_breaker", "debugger_support.remote_debugger_support",
        "debugger_support.remote_debugging_enabled", "debugger_support.debugger_pending_call",
        "debugger_support.debugger_script_path", "debugger_support.debugger_script_path_size"})
    f.emplace_back(n);
  return f;
}

// Offsets in the struct are small; a value this large means we are not reading the struct.
constexpr std::uint64_t kMaxSaneOffset = 1 << 20;

}  // namespace

const std::vector<std::string>& debug_offsets_fields(int minor) {
  static const std::vector<std::string> k313 = fields_313();
  static const std::vector<std::string> k314 = fields_314();
  static const std::vector<std::string> kNone;
  if (minor == 13) return k313;
  if (minor == 14) return k314;
  return kNone;
}

std::size_t debug_offsets_max_size() {
  return sizeof(kDebugCookie) + 8 * std::max(fields_313().size(), fields_314().size());
}

std::string version_from_hex(std::uint64_t hex) {
  unsigned major = (hex >> 24) & 0xff;
  unsigned minor = (hex >> 16) & 0xff;
  unsigned micro = (hex >> 8) & 0xff;
  unsigned level = (hex >> 4) & 0xf;
  unsigned serial = hex & 0xf;
  std::string out = fmt::format("{}.{}.{}", major, minor, micro);
  if (level == 0xa) out += fmt::format("a{}", serial);
  if (level == 0xb) out += fmt::format("b{}", serial);
  if (level == 0xc) out += fmt::format("rc{}", serial);
  return out;
}

bool has_debug_cookie(MemoryReader& mem, std::uint64_t runtime) {
  char cookie[sizeof(kDebugCookie)];
  return mem.read_exact(runtime, cookie, sizeof(cookie)) &&
         std::memcmp(cookie, kDebugCookie, sizeof(cookie)) == 0;
}

Result<PyLayout> parse_debug_offsets(const std::uint8_t* data, std::size_t len,
                                     std::uint64_t* version_hex) {
  if (len < 16 || std::memcmp(data, kDebugCookie, sizeof(kDebugCookie)) != 0)
    return Error(Errc::bad_data, "_Py_DebugOffsets: no 'xdebugpy' cookie");
  std::uint64_t hex = 0;
  std::memcpy(&hex, data + 8, 8);
  if (version_hex != nullptr) *version_hex = hex;
  int major = static_cast<int>((hex >> 24) & 0xff);
  int minor = static_cast<int>((hex >> 16) & 0xff);
  const auto& names = debug_offsets_fields(major == 3 ? minor : -1);
  if (names.empty())
    return Error(Errc::unsupported,
                 fmt::format("CPython {}: _Py_DebugOffsets layout of this version is not known "
                             "(hangscan reads {})",
                             version_from_hex(hex), supported_versions()));
  if (len < 8 + names.size() * 8) return Error(Errc::bad_data, "_Py_DebugOffsets: short read");

  std::map<std::string, std::uint64_t> v;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::uint64_t x = 0;
    std::memcpy(&x, data + 8 + i * 8, 8);
    v[names[i]] = x;
  }
  bool bad = false;
  auto get = [&v, &bad](const char* name) -> std::int64_t {
    std::uint64_t x = v[name];
    if (x > kMaxSaneOffset) bad = true;
    return static_cast<std::int64_t>(x);
  };

  PyLayout l;
  l.major = major;
  l.minor = minor;
  l.source = fmt::format("_Py_DebugOffsets of the target ({})", version_from_hex(hex));
  l.frame_model = FrameModel::interp_frame_313;
  l.line_table = LineTable::location311;
  l.lasti_scale = 2;
  l.stackref = minor >= 14;
  l.long_tagged = true;
  l.shim_owner = 3;
  l.free_threaded = v["free_threaded"] != 0;
  PyOffsets& o = l.off;
  o.runtime_interpreters_head = get("runtime_state.interpreters_head");
  o.interp_next = get("interpreter_state.next");
  o.interp_threads_head = get("interpreter_state.threads_head");
  o.interp_gil = get("interpreter_state.gil_runtime_state");
  o.gil_locked = get("interpreter_state.gil_runtime_state_locked") - o.interp_gil;
  o.gil_last_holder = get("interpreter_state.gil_runtime_state_holder") - o.interp_gil;
  o.tstate_next = get("thread_state.next");
  o.tstate_interp = get("thread_state.interp");
  o.tstate_frame = get("thread_state.current_frame");
  o.tstate_thread_id = get("thread_state.thread_id");
  o.tstate_native_thread_id = get("thread_state.native_thread_id");
  o.frame_previous = get("interpreter_frame.previous");
  o.frame_code = get("interpreter_frame.executable");
  o.frame_instr = get("interpreter_frame.instr_ptr");
  o.frame_localsplus = get("interpreter_frame.localsplus");
  o.frame_owner = get("interpreter_frame.owner");
  o.code_filename = get("code_object.filename");
  o.code_name = get("code_object.name");
  o.code_qualname = get("code_object.qualname");
  o.code_firstlineno = get("code_object.firstlineno");
  o.code_linetable = get("code_object.linetable");
  o.code_adaptive = get("code_object.co_code_adaptive");
  o.code_varnames = get("code_object.localsplusnames");
  o.code_localspluskinds = get("code_object.localspluskinds");
  o.code_nlocals = -1;
  o.object_type = get("pyobject.ob_type");
  o.type_name = get("type_object.tp_name");
  o.unicode_length = get("unicode_object.length");
  o.unicode_state = get("unicode_object.state");
  o.unicode_ascii_size = get("unicode_object.asciiobject_size");
  // PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject (not in the table).
  o.unicode_compact_size = o.unicode_ascii_size + 16;
  o.bytes_size = get("bytes_object.ob_size");
  o.bytes_data = get("bytes_object.ob_sval");
  o.tuple_size = get("tuple_object.ob_size");
  o.tuple_items = get("tuple_object.ob_item");
  o.list_size = get("list_object.ob_size");
  o.list_items = get("list_object.ob_item");
  o.float_value = get("float_object.ob_fval");
  o.long_size = get("long_object.lv_tag");
  o.long_digits = get("long_object.ob_digit");
  // Fields the struct lacks: from the 3.13 headers (the same in 3.14: the structs they are in
  // only grew at their ends), then what the struct has overrides them.
  if (const PyOffsets* extra = debug_offsets_extra()) {
    o.type_basicsize = extra->type_basicsize;
    o.type_dictoffset = extra->type_dictoffset;
    o.type_flags = extra->type_flags;
    o.heaptype_cached_keys = extra->heaptype_cached_keys;
    o.keys_size = extra->keys_size;
    o.keys_kind = extra->keys_kind;
    o.keys_nentries = extra->keys_nentries;
    o.keys_indices = extra->keys_indices;
    o.values_items = extra->values_items;
    o.set_used = extra->set_used;
    o.set_mask = extra->set_mask;
    o.set_table = extra->set_table;
    o.module_dict = extra->module_dict;
  }
  // Free-threaded builds: PyObject_HEAD is 16 bytes longer (ob_tid, padding, ob_mutex,
  // ob_gc_bits, ob_ref_local, ob_ref_shared before ob_type), so every field of a PyObject-headed
  // struct taken from the default build's headers moves by as much. PyDictKeysObject and
  // PyDictValues are not PyObjects: their only free-threaded addition (dk_mutex, one byte) fills
  // the padding after dk_kind, so the keys offsets stay.
  o.object_head = get("pyobject.ob_type") + 8;
  std::int64_t shift = o.object_head - 16;
  for (std::int64_t* f :
       {&o.type_basicsize, &o.type_dictoffset, &o.type_flags, &o.heaptype_cached_keys, &o.set_used,
        &o.set_mask, &o.set_table, &o.module_dict})
    if (*f >= 0) *f += shift;
  if (l.free_threaded && v.count("code_object.co_tlbc") != 0) {  // 3.14t: per-thread bytecode
    o.frame_tlbc_index = get("interpreter_frame.tlbc_index");
    o.code_tlbc = get("code_object.co_tlbc");
  }
  o.interp_modules = get("interpreter_state.imports_modules");
  o.runtime_finalizing = get("runtime_state.finalizing");
  o.interp_gc_collecting = get("interpreter_state.gc") + get("gc.collecting");
  o.dict_keys = get("dict_object.ma_keys");
  o.dict_values = get("dict_object.ma_values");
  if (v.count("set_object.used") != 0) {
    o.set_used = get("set_object.used");
    o.set_mask = get("set_object.mask");
    o.set_table = get("set_object.table");
  }
  if (v.count("gen_object.gi_iframe") != 0) {
    o.gen_iframe = get("gen_object.gi_iframe");
    o.gen_frame_state = get("gen_object.gi_frame_state");
    o.frame_stackpointer = get("interpreter_frame.stackpointer");
  }
  o.interp_size = static_cast<std::int64_t>(v["interpreter_state.size"]);  // may be large
  l.instance_dict = instance_dict_model(minor);
  if (bad || o.gil_locked < 0 || o.gil_last_holder < 0)
    return Error(Errc::bad_data,
                 fmt::format("_Py_DebugOffsets of CPython {} holds implausible offsets",
                             version_from_hex(hex)));
  return l;
}

}  // namespace hangscan::python
