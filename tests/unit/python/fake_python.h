// Fabricates CPython objects (runtime, interpreter, thread states, frames, code, str, int...)
// in a BufferMemory, laid out by a PyLayout, so the walker and decoder run on them exactly as
// on a live target.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "python/debug_offsets.h"
#include "python/layout.h"
#include "python/python_reader.h"
#include "target/memory_reader.h"
#include "target/target.h"

namespace hangscan::python::testing {

// One Python frame to fabricate.
struct FakeFrame {
  std::string name;
  std::string file = "/src/app.py";
  int firstlineno = 10;
  int line = 12;                                              // line the frame is at
  bool entry = true;                                          // 3.11 is_entry flag
  std::vector<std::pair<std::string, std::uint64_t>> locals;  // name, object address
};

class FakePython {
 public:
  static constexpr std::uint64_t kBase = 0x10000000;
  static constexpr std::size_t kSize = 4 << 20;

  explicit FakePython(PyLayout layout) : l_(std::move(layout)), mem_(kSize, 0) {}

  const PyLayout& layout() const { return l_; }
  const PyOffsets& off() const { return l_.off; }

  std::uint64_t alloc(std::size_t n) {
    std::uint64_t a = kBase + used_;
    used_ += (n + 15) & ~std::size_t{15};
    if (used_ > kSize) throw std::runtime_error("fake heap exhausted");
    return a;
  }
  void put(std::uint64_t addr, const void* p, std::size_t n) {
    std::memcpy(&mem_[addr - kBase], p, n);
  }
  template <class T>
  void put_as(std::uint64_t addr, T v) {
    put(addr, &v, sizeof(v));
  }
  void put_u64(std::uint64_t addr, std::uint64_t v) { put_as(addr, v); }
  template <class T>
  T get_as(std::uint64_t addr) const {
    T v{};
    std::memcpy(&v, &mem_[addr - kBase], sizeof(T));
    return v;
  }

  // A BufferMemory holding everything fabricated so far.
  std::unique_ptr<BufferMemory> memory() const {
    auto m = std::make_unique<BufferMemory>();
    m->add(kBase, std::vector<std::uint8_t>(mem_.begin(), mem_.begin() + used_));
    return m;
  }

  std::uint64_t type(const std::string& name) {
    if (auto it = types_.find(name); it != types_.end()) return it->second;
    std::uint64_t t = alloc(64);
    std::uint64_t s = alloc(name.size() + 1);
    put(s, name.c_str(), name.size() + 1);
    put_u64(t + off().type_name, s);
    types_[name] = t;
    return t;
  }
  // `size` as in a default build: a free-threaded PyObject_HEAD adds object_head - 16 bytes.
  std::uint64_t object(const std::string& type_name, std::size_t size) {
    std::uint64_t o = alloc(size + static_cast<std::size_t>(off().object_head - 16));
    put_u64(o + 0, 1);  // refcount
    put_u64(o + off().object_type, type(type_name));
    return o;
  }
  // Compact str: ASCII when every code point < 128, else UCS-2 (kind 2) or UCS-4.
  std::uint64_t str(const std::u32string& text) {
    std::uint32_t max = 0;
    for (char32_t c : text) max = std::max<std::uint32_t>(max, c);
    unsigned kind = max < 256 ? 1 : max < 65536 ? 2 : 4;
    bool ascii = max < 128;
    std::int64_t data_off = ascii ? off().unicode_ascii_size : off().unicode_compact_size;
    std::uint64_t o = object("str", data_off + (text.size() + 1) * kind);
    put_as<std::int64_t>(o + off().unicode_length, static_cast<std::int64_t>(text.size()));
    std::uint32_t state = (kind << 2) | (1u << 5) | (ascii ? (1u << 6) : 0);
    put_as<std::uint32_t>(o + off().unicode_state, state);
    for (std::size_t i = 0; i < text.size(); ++i) {
      std::uint32_t c = text[i];
      put(o + data_off + i * kind, &c, kind);  // little-endian: low bytes first
    }
    return o;
  }
  std::uint64_t str(const std::string& ascii) {
    return str(std::u32string(ascii.begin(), ascii.end()));
  }
  std::uint64_t bytes(const std::string& b) {
    std::uint64_t o = object("bytes", off().bytes_data + b.size() + 1);
    put_as<std::int64_t>(o + off().bytes_size, static_cast<std::int64_t>(b.size()));
    put(o + off().bytes_data, b.data(), b.size());
    return o;
  }
  std::uint64_t tuple(const std::vector<std::uint64_t>& items, const char* t = "tuple") {
    std::uint64_t o = object(t, off().tuple_items + 8 * items.size() + 8);
    put_as<std::int64_t>(o + off().tuple_size, static_cast<std::int64_t>(items.size()));
    for (std::size_t i = 0; i < items.size(); ++i) put_u64(o + off().tuple_items + 8 * i, items[i]);
    return o;
  }
  std::uint64_t list(const std::vector<std::uint64_t>& items) {
    std::uint64_t o = object("list", 64);
    put_as<std::int64_t>(o + off().list_size, static_cast<std::int64_t>(items.size()));
    std::uint64_t array = alloc(8 * items.size() + 8);
    for (std::size_t i = 0; i < items.size(); ++i) put_u64(array + 8 * i, items[i]);
    put_u64(o + off().list_items, array);
    return o;
  }
  // A combined-table dict of up to 5 items (8 slots, 1-byte indices, 24-byte entries).
  std::uint64_t dict(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& items) {
    std::uint64_t d = object("dict", 48);
    put_as<std::int64_t>(d + off().object_head,
                         static_cast<std::int64_t>(items.size()));  // ma_used
    std::uint64_t keys = alloc(static_cast<std::size_t>(off().keys_indices) + 8 + 24 * 8);
    if (off().keys_kind < 0) {
      put_as<std::int64_t>(keys + off().keys_size, 8);
    } else {
      put_as<std::uint8_t>(keys + off().keys_size, 3);      // log2 size
      put_as<std::uint8_t>(keys + off().keys_size + 1, 3);  // log2 index bytes
      put_as<std::uint8_t>(keys + off().keys_kind, 0);      // general entries
    }
    put_as<std::int64_t>(keys + off().keys_nentries, static_cast<std::int64_t>(items.size()));
    std::uint64_t entries = keys + static_cast<std::uint64_t>(off().keys_indices) + 8;
    for (std::size_t i = 0; i < items.size(); ++i) {
      put_u64(entries + 24 * i + 8, items[i].first);
      put_u64(entries + 24 * i + 16, items[i].second);
    }
    put_u64(d + off().dict_keys, keys);
    return d;
  }
  std::uint64_t integer(std::int64_t v, const char* t = "int") {
    std::uint64_t mag = v < 0 ? static_cast<std::uint64_t>(-v) : static_cast<std::uint64_t>(v);
    std::vector<std::uint32_t> digits;
    while (mag != 0) {
      digits.push_back(static_cast<std::uint32_t>(mag & ((1u << 30) - 1)));
      mag >>= 30;
    }
    std::uint64_t o = object(t, off().long_digits + 4 * (digits.size() + 1));
    if (l_.long_tagged) {
      std::uint64_t sign = v == 0 ? 1 : v < 0 ? 2 : 0;
      put_u64(o + off().long_size, (digits.size() << 3) | sign);
    } else {
      auto n = static_cast<std::int64_t>(digits.size());
      put_as<std::int64_t>(o + off().long_size, v < 0 ? -n : n);
    }
    for (std::size_t i = 0; i < digits.size(); ++i)
      put_as<std::uint32_t>(o + off().long_digits + 4 * i, digits[i]);
    return o;
  }
  std::uint64_t floating(double d) {
    std::uint64_t o = object("float", 32);
    put_as<double>(o + off().float_value, d);
    return o;
  }

  // A line table in the layout's format where code unit `unit` (2 bytes) is on `line` and
  // units before it are on firstlineno + 1.
  std::string line_table(int firstlineno, int line, int unit) {
    std::string t;
    auto b = [&t](int v) { t.push_back(static_cast<char>(v)); };
    switch (l_.line_table) {
      case LineTable::lnotab:
        b(0);
        b(1);
        b(2 * unit);
        b(line - firstlineno - 1);
        break;
      case LineTable::linetable310:
        b(2 * unit);
        b(1);
        b(8);
        b(line - firstlineno - 1);
        break;
      case LineTable::location311: {
        // "no column" entries: 0x80 | 13 << 3 | (length - 1), then a signed varint.
        auto svarint = [&b](int d) {
          unsigned u = d < 0 ? (static_cast<unsigned>(-d) << 1) | 1 : static_cast<unsigned>(d) << 1;
          while (u >= 64) {
            b(64 | (u & 63));
            u >>= 6;
          }
          b(static_cast<int>(u));
        };
        b(0x80 | (13 << 3) | (unit - 1));
        svarint(1);
        b(0x80 | (13 << 3) | 3);
        svarint(line - firstlineno - 1);
        break;
      }
    }
    return t;
  }

  std::uint64_t code(const FakeFrame& f) {
    std::uint64_t c = object("code", 512);
    std::uint64_t name = str(f.name);
    auto dot = f.name.rfind('.');
    std::uint64_t short_name = dot == std::string::npos ? name : str(f.name.substr(dot + 1));
    put_u64(c + off().code_name, short_name);
    if (off().code_qualname >= 0) put_u64(c + off().code_qualname, name);
    put_u64(c + off().code_filename, str(f.file));
    put_as<std::int32_t>(c + off().code_firstlineno, f.firstlineno);
    put_u64(c + off().code_linetable, bytes(line_table(f.firstlineno, f.line, kUnit)));
    std::vector<std::uint64_t> names;
    for (const auto& [n, v] : f.locals) names.push_back(str(n));
    put_u64(c + off().code_varnames, tuple(names));
    if (off().code_nlocals >= 0)
      put_as<std::int32_t>(c + off().code_nlocals, static_cast<std::int32_t>(names.size()));
    if (off().code_localspluskinds >= 0)
      put_u64(c + off().code_localspluskinds, bytes(std::string(names.size(), '\x20')));
    return c;
  }

  // Fabricates one frame whose previous frame is `prev`; returns its address.
  std::uint64_t frame(const FakeFrame& f, std::uint64_t prev) {
    std::uint64_t c = code(f);
    std::uint64_t fr =
        alloc(static_cast<std::size_t>(off().frame_localsplus) + 8 * (f.locals.size() + 1));
    put_u64(fr + off().frame_previous, prev);
    put_u64(fr + off().frame_code, l_.stackref ? (c | 1) : c);
    if (l_.frame_model == FrameModel::frame_object) {
      put_as<std::int32_t>(fr + off().frame_instr, 2 * kUnit / l_.lasti_scale);
    } else {
      put_u64(fr + off().frame_instr, c + off().code_adaptive + 2 * kUnit);
    }
    if (off().frame_is_entry >= 0) put_as<std::uint8_t>(fr + off().frame_is_entry, f.entry ? 1 : 0);
    for (std::size_t i = 0; i < f.locals.size(); ++i)
      put_u64(fr + off().frame_localsplus + 8 * i, f.locals[i].second);
    return fr;
  }
  // A C-stack shim frame (3.12+), the boundary between two eval-loop calls.
  std::uint64_t shim(std::uint64_t prev) {
    std::uint64_t fr = alloc(static_cast<std::size_t>(off().frame_localsplus) + 8);
    put_u64(fr + off().frame_previous, prev);
    put_u64(fr + off().frame_code, 0xdead0);
    put_as<std::int8_t>(fr + off().frame_owner, static_cast<std::int8_t>(l_.shim_owner));
    return fr;
  }
  // Frames given innermost first; on 3.12+ a shim is put below each group (a group ends at
  // an entry frame, innermost first).
  std::uint64_t chain(const std::vector<FakeFrame>& innermost_first) {
    bool shims = l_.shim_owner >= 0;
    std::uint64_t prev = shims ? shim(0) : 0;
    bool first = true;
    for (auto it = innermost_first.rbegin(); it != innermost_first.rend(); ++it) {
      if (shims && it->entry && !first) prev = shim(prev);
      prev = frame(*it, prev);
      first = false;
    }
    return prev;
  }

  std::uint64_t runtime() {
    if (runtime_ == 0) {
      runtime_ = alloc(4096);
      interp_ =
          alloc(static_cast<std::size_t>(std::max<std::int64_t>(8192, off().interp_gil + 256)));
      // 3.6 has no _PyRuntime: the list head is a static variable of its own.
      head_ptr_ = off().runtime_interpreters_head >= 0
                      ? runtime_ + static_cast<std::uint64_t>(off().runtime_interpreters_head)
                      : alloc(8);
      put_u64(head_ptr_, interp_);
      if (off().interp_gil_ptr >= 0) put_u64(interp_ + off().interp_gil_ptr, alloc(256));
    }
    return runtime_;
  }
  std::uint64_t interp() {
    runtime();
    return interp_;
  }
  std::uint64_t gil_struct() {
    if (off().interp_gil >= 0) return interp() + off().interp_gil;
    if (off().interp_gil_ptr >= 0) return get_as<std::uint64_t>(interp() + off().interp_gil_ptr);
    return runtime() + off().runtime_gil;
  }
  // 3.6 keeps no GIL struct we read: _PyThreadState_Current is the holder.
  bool gil_by_current() const {
    return off().interp_gil < 0 && off().interp_gil_ptr < 0 && off().runtime_gil < 0;
  }
  std::uint64_t current_ptr() {
    if (current_ == 0) current_ = alloc(8);
    return current_;
  }
  void set_gil_holder(std::uint64_t tstate) {
    if (gil_by_current()) {
      put_u64(current_ptr(), tstate);
      return;
    }
    put_as<std::int32_t>(gil_struct() + off().gil_locked, tstate != 0 ? 1 : 0);
    put_u64(gil_struct() + off().gil_last_holder, tstate);
  }

  // Adds a thread (appended at the head, like CPython) whose current frame is `frame`.
  std::uint64_t thread(std::uint64_t frame, int native_tid, std::uint64_t pthread_id) {
    std::uint64_t ts = alloc(512);
    std::uint64_t head = get_as<std::uint64_t>(interp() + off().interp_threads_head);
    put_u64(ts + off().tstate_next, head);
    put_u64(ts + off().tstate_interp, interp());
    put_u64(ts + off().tstate_thread_id, pthread_id);
    if (off().tstate_native_thread_id >= 0)
      put_u64(ts + off().tstate_native_thread_id, static_cast<std::uint64_t>(native_tid));
    if (off().cframe_current_frame >= 0) {
      std::uint64_t cf = alloc(64);
      put_u64(cf + off().cframe_current_frame, frame);
      put_u64(ts + off().tstate_frame, cf);
    } else {
      put_u64(ts + off().tstate_frame, frame);
    }
    put_u64(interp() + off().interp_threads_head, ts);
    return ts;
  }

  Located located() {
    Located loc;
    loc.layout = l_;
    loc.version = "3." + std::to_string(l_.minor) + ".0";
    loc.locator = "fabricated";
    runtime();
    loc.interp_head_ptr = head_ptr_;
    if (off().runtime_gil >= 0) loc.gil_struct = runtime() + off().runtime_gil;
    if (gil_by_current()) loc.gil_current_ptr = current_ptr();
    return loc;
  }

  static constexpr int kUnit = 3;  // every fabricated frame is at code unit 3

 private:
  PyLayout l_;
  std::vector<std::uint8_t> mem_;
  std::size_t used_ = 0;
  std::uint64_t runtime_ = 0;
  std::uint64_t interp_ = 0;
  std::uint64_t current_ = 0;
  std::uint64_t head_ptr_ = 0;
  std::map<std::string, std::uint64_t> types_;
};

// A _Py_DebugOffsets blob for minor 13 or 14 with a made-up but self-consistent layout
// (different from every real table, so nothing passes by accident). `free_threaded`: a
// 3.13t/3.14t build, whose PyObject_HEAD is 16 bytes longer (ob_type at 24), so every field of
// a PyObject-headed struct is 16 further; 3.14t also names the per-thread bytecode fields.
inline std::vector<std::uint8_t> fake_debug_offsets(int minor, std::uint64_t version_hex,
                                                    bool free_threaded = false) {
  std::map<std::string, std::uint64_t> v = {
      {"version", version_hex},
      {"runtime_state.interpreters_head", 648},
      {"interpreter_state.next", 24},
      {"interpreter_state.threads_head", 88},
      {"interpreter_state.gil_runtime_state", 5000},
      {"interpreter_state.gil_runtime_state_locked", 5000 + 16},
      {"interpreter_state.gil_runtime_state_holder", 5000 + 8},
      {"thread_state.next", 8},
      {"thread_state.interp", 16},
      {"thread_state.current_frame", 80},
      {"thread_state.thread_id", 168},
      {"thread_state.native_thread_id", 176},
      {"interpreter_frame.previous", 8},
      {"interpreter_frame.executable", 0},
      {"interpreter_frame.instr_ptr", 56},
      {"interpreter_frame.localsplus", 80},
      {"interpreter_frame.owner", 74},
      {"code_object.filename", 112},
      {"code_object.name", 120},
      {"code_object.qualname", 128},
      {"code_object.linetable", 136},
      {"code_object.firstlineno", 68},
      {"code_object.localsplusnames", 96},
      {"code_object.localspluskinds", 104},
      {"code_object.co_code_adaptive", 208},
      {"pyobject.ob_type", 8},
      {"type_object.tp_name", 24},
      {"tuple_object.ob_item", 24},
      {"tuple_object.ob_size", 16},
      {"list_object.ob_item", 24},
      {"list_object.ob_size", 16},
      {"dict_object.ma_keys", 32},
      {"dict_object.ma_values", 40},
      {"float_object.ob_fval", 16},
      {"long_object.lv_tag", 16},
      {"long_object.ob_digit", 24},
      {"bytes_object.ob_size", 16},
      {"bytes_object.ob_sval", 32},
      {"unicode_object.state", 32},
      {"unicode_object.length", 16},
      {"unicode_object.asciiobject_size", 40},
  };
  if (free_threaded) {
    v["interpreter_frame.tlbc_index"] = 76;
    v["code_object.co_tlbc"] = 176;
    for (auto& [name, value] : v)
      for (const char* object :
           {"pyobject.", "type_object.", "tuple_object.", "list_object.", "dict_object.",
            "float_object.", "long_object.", "bytes_object.", "unicode_object.", "code_object."})
        if (name.rfind(object, 0) == 0) value += 16;
    v["free_threaded"] = 1;
  }
  const auto& names = debug_offsets_fields(minor);
  std::vector<std::uint8_t> out(8 + names.size() * 8, 0);
  std::memcpy(out.data(), kDebugCookie, 8);
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::uint64_t x = 0;
    if (auto it = v.find(names[i]); it != v.end()) x = it->second;
    std::memcpy(out.data() + 8 + i * 8, &x, 8);
  }
  return out;
}

}  // namespace hangscan::python::testing
