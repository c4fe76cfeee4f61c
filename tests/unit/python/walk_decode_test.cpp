// walk() and decode() over CPython objects fabricated in local memory, for every layout:
// the generated tables (3.6-3.12) and _Py_DebugOffsets layouts for 3.13 and 3.14.
#include <gtest/gtest.h>

#include "fake_python.h"
#include "python/debug_offsets.h"
#include "python/python_reader.h"

namespace hangscan::python {
namespace {

using testing::FakeFrame;
using testing::FakePython;

constexpr int kFreeThreaded = 100;  // minor + this: the free-threaded build (3.13t, 3.14t)

PyLayout layout_for(int minor) {
  bool ft = minor > kFreeThreaded;
  if (ft) minor -= kFreeThreaded;
  if (minor >= 13) {
    std::uint64_t hex = 0x03000000u | (static_cast<std::uint64_t>(minor) << 16) | 0xf0;
    auto blob = testing::fake_debug_offsets(minor, hex, ft);
    auto parsed = parse_debug_offsets(blob.data(), blob.size());
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().what());
    return parsed.value();
  }
  auto row = builtin_layout(3, minor);
  EXPECT_TRUE(row.has_value()) << "no table for 3." << minor;
  return *row;
}

std::string expected_name(const PyLayout& l, const std::string& qualname) {
  if (l.off.code_qualname >= 0) return qualname;
  auto dot = qualname.rfind('.');
  return dot == std::string::npos ? qualname : qualname.substr(dot + 1);
}

class WalkDecode : public ::testing::TestWithParam<int> {};

TEST_P(WalkDecode, ThreadsFramesLinesGilAndIdle) {
  FakePython py(layout_for(GetParam()));
  const PyLayout& l = py.layout();
  std::uint64_t chain_a = py.chain({
      {"worker", "/src/app.py", 18, 21, false, {}},
      {"Runner.run", "/src/app.py", 30, 33, true, {}},
      {"<module>", "/src/main.py", 1, 5, true, {}},
  });
  std::uint64_t idle = py.thread(0, 4243, 0x7f0000002000);
  std::uint64_t busy = py.thread(chain_a, 4242, 0x7f0000001000);
  py.set_gil_holder(busy);
  auto mem = py.memory();

  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(*mem, false);
  ASSERT_TRUE(raw.diagnostics.empty()) << raw.diagnostics.front();
  ASSERT_EQ(raw.threads.size(), 2u);
  const RawPythonThread& a = raw.threads[0];  // the newest thread is the list head
  EXPECT_EQ(a.tstate, busy);
  EXPECT_EQ(raw.threads[1].tstate, idle);
  EXPECT_TRUE(a.holds_gil);
  EXPECT_FALSE(raw.threads[1].holds_gil);
  ASSERT_EQ(a.frames.size(), 3u);
  EXPECT_TRUE(a.error.empty()) << a.error;
  // Entry frames: every frame is its own eval call before 3.11; after, by flag or shim.
  bool per_frame = l.frame_model == FrameModel::frame_object;
  EXPECT_EQ(a.frames[0].is_entry, per_frame);
  EXPECT_TRUE(a.frames[1].is_entry);
  EXPECT_TRUE(a.frames[2].is_entry);
  // From 3.12 an entry frame carries the address of the shim below it: its eval-loop call's
  // record on the C stack, which names the native eval-loop frame without symbols.
  if (l.shim_owner >= 0) {
    EXPECT_EQ(a.frames[0].eval_marker, 0u);
    std::uint64_t shim = py.get_as<std::uint64_t>(a.frames[1].frame_addr + l.off.frame_previous);
    EXPECT_NE(shim, a.frames[2].frame_addr);
    EXPECT_EQ(a.frames[1].eval_marker, shim);
  }

  auto stacks = reader.decode(raw, *mem);
  ASSERT_EQ(stacks.size(), 2u);
  const PythonThreadStack& s = stacks[0];
  EXPECT_TRUE(s.gil);
  EXPECT_FALSE(s.idle);
  EXPECT_TRUE(stacks[1].idle);
  EXPECT_EQ(s.pthread_id, 0x7f0000001000u);
  if (l.off.tstate_native_thread_id >= 0) {
    EXPECT_EQ(s.native_tid, 4242);
  } else {
    EXPECT_FALSE(s.native_tid.has_value());
  }
  ASSERT_EQ(s.frames.size(), 3u);
  EXPECT_EQ(s.frames[0].frame.kind, FrameKind::python);
  EXPECT_EQ(s.frames[0].frame.function, "worker");
  EXPECT_EQ(s.frames[0].frame.file, "/src/app.py");
  EXPECT_EQ(s.frames[0].frame.line, 21);
  EXPECT_EQ(s.frames[1].frame.function, expected_name(l, "Runner.run"));
  EXPECT_EQ(s.frames[1].frame.line, 33);
  EXPECT_EQ(s.frames[2].frame.function, "<module>");
  EXPECT_EQ(s.frames[2].frame.file, "/src/main.py");
  EXPECT_EQ(s.frames[2].frame.line, 5);
  EXPECT_TRUE(s.notes.empty());
}

TEST_P(WalkDecode, LocalsAreRenderedShort) {
  FakePython py(layout_for(GetParam()));
  FakeFrame f{"loop", "/src/loop.py", 40, 44, true, {}};
  f.locals = {
      {"i", py.integer(41)},
      {"neg", py.integer(-7)},
      {"zero", py.integer(0)},
      {"big", py.integer(static_cast<std::int64_t>(1) << 62)},
      {"ratio", py.floating(1.5)},
      {"whole", py.floating(2.0)},
      {"flag", py.integer(1, "bool")},
      {"nothing", py.object("NoneType", 16)},
      {"name", py.str("rank-3")},
      {"accent", py.str(U"h\u00e9llo\u20ac")},
      {"long", py.str(std::string(100, 'x'))},
      {"blob", py.bytes("abc")},
      {"pair", py.tuple({py.integer(1), py.integer(2)})},
      {"items", py.list({py.integer(-1234), py.str("a"), py.list({}), py.tuple({py.integer(5)})})},
      {"table",
       py.dict({{py.str("a"), py.object("NoneType", 16)}, {py.str("b"), py.floating(0.25)}})},
      {"many", py.list(std::vector<std::uint64_t>(12, py.integer(7)))},
      {"other", py.object("Thing", 32)},
      {"unbound", 0},
  };
  std::uint64_t top = py.chain({f});
  py.thread(top, 7, 0x1000);
  auto mem = py.memory();
  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(*mem, true);
  ASSERT_EQ(raw.threads.size(), 1u);
  ASSERT_EQ(raw.threads[0].frames.size(), 1u);
  std::vector<Local> expect = {
      {"i", "41"},
      {"neg", "-7"},
      {"zero", "0"},
      {"big", "4611686018427387904"},
      {"ratio", "1.5"},
      {"whole", "2.0"},
      {"flag", "True"},
      {"nothing", "None"},
      {"name", "'rank-3'"},
      {"accent", "'h\xc3\xa9llo\xe2\x82\xac'"},
      {"long", "'" + std::string(60, 'x') + "...'"},
      {"blob", "b'abc'"},
      {"pair", "(1, 2)"},
      {"items", "[-1234, 'a', [], (5,)]"},
      {"table", "{'a': None, 'b': 0.25}"},
      {"many", "[7, 7, 7, 7, 7, 7, 7, 7, 7, 7, ... 2 more]"},
  };
  auto& got = raw.threads[0].frames[0].locals;
  ASSERT_EQ(got.size(), expect.size() + 1);
  EXPECT_TRUE(got.back().value.starts_with("<Thing at 0x")) << got.back().value;
  got.pop_back();
  EXPECT_EQ(raw.threads[0].frames[0].locals, expect);
  // Locals travel through decode() unchanged.
  auto stacks = reader.decode(raw, *mem);
  EXPECT_EQ(stacks[0].frames[0].frame.locals, expect);
}

TEST_P(WalkDecode, WithoutLocalsNothingIsRead) {
  FakePython py(layout_for(GetParam()));
  FakeFrame f{"loop", "/src/loop.py", 40, 44, true, {{"i", py.integer(41)}}};
  py.thread(py.chain({f}), 7, 0x1000);
  auto mem = py.memory();
  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(*mem, false);
  ASSERT_EQ(raw.threads[0].frames.size(), 1u);
  EXPECT_TRUE(raw.threads[0].frames[0].locals.empty());
}

TEST_P(WalkDecode, CodeObjectsAreDecodedOnceAndCached) {
  FakePython py(layout_for(GetParam()));
  std::uint64_t top = py.chain({{"f", "/a.py", 1, 3, true, {}}});
  py.thread(top, 7, 0x1000);
  auto mem = py.memory();
  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(*mem, false);
  auto first = reader.decode(raw, *mem);
  // After the first decode the code object is served from the cache: an empty memory works.
  BufferMemory empty;
  auto second = reader.decode(raw, empty);
  ASSERT_EQ(second[0].frames.size(), 1u);
  EXPECT_EQ(second[0].frames[0].frame, first[0].frames[0].frame);
}

std::string minor_name(const ::testing::TestParamInfo<int>& info) {
  if (info.param > kFreeThreaded) return "py3_" + std::to_string(info.param - kFreeThreaded) + "t";
  return "py3_" + std::to_string(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, WalkDecode,
                         ::testing::Values(6, 7, 8, 9, 10, 11, 12, 13, 14, kFreeThreaded + 13,
                                           kFreeThreaded + 14),
                         minor_name);

TEST(WalkDecode38, NativeTidFromTheGlibcThreadControlBlock) {
  // Before 3.11 a thread state holds only pthread_t: glibc's struct pthread (TCB pointing to
  // itself) gives the kernel tid, so threads match even without registers (--nonblocking).
  FakePython py(layout_for(8));
  std::uint64_t tcb = py.alloc(0x400);
  py.put_u64(tcb, tcb);
  py.put_u64(tcb + 16, tcb);
  py.put_as<std::int32_t>(tcb + 0x2d0, 31337);
  std::uint64_t not_tcb = py.alloc(0x400);
  py.put_as<std::int32_t>(not_tcb + 0x2d0, 4444);
  py.thread(py.chain({{"f", "/f.py", 1, 2, true, {}}}), 0, not_tcb);
  py.thread(py.chain({{"g", "/f.py", 1, 2, true, {}}}), 0, tcb);
  auto mem = py.memory();
  PythonReader reader(py.located());
  auto stacks = reader.decode(reader.walk(*mem, false), *mem);
  ASSERT_EQ(stacks.size(), 2u);
  EXPECT_EQ(stacks[0].native_tid, 31337);
  EXPECT_EQ(stacks[0].pthread_id, tcb);
  EXPECT_FALSE(stacks[1].native_tid.has_value());
}

TEST(WalkDecode314, StackRefTagsAreStripped) {
  FakePython py(layout_for(14));
  ASSERT_TRUE(py.layout().stackref);
  FakeFrame f{"tagged", "/t.py", 1, 3, true, {}};
  f.locals = {{"small", (std::uint64_t{41} << 2) | 3}, {"obj", py.str("s") | 1}};
  py.thread(py.chain({f}), 9, 0x2000);
  auto mem = py.memory();
  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(*mem, true);
  ASSERT_EQ(raw.threads[0].frames.size(), 1u);
  std::vector<Local> expect = {{"small", "41"}, {"obj", "'s'"}};
  EXPECT_EQ(raw.threads[0].frames[0].locals, expect);
  auto stacks = reader.decode(raw, *mem);
  EXPECT_EQ(stacks[0].frames[0].frame.function, "tagged");
}

TEST(Layouts, GeneratedTablesMatchKnownOffsets) {
  // 3.11 offsets checked by hand against a live 3.11.2 and 3.11.7 (field notes, section 4).
  auto l = builtin_layout(3, 11);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->off.runtime_interpreters_head, 40);
  EXPECT_EQ(l->off.interp_threads_head, 16);
  EXPECT_EQ(l->off.tstate_next, 8);
  EXPECT_EQ(l->off.tstate_frame, 56);
  EXPECT_EQ(l->off.tstate_thread_id, 152);
  EXPECT_EQ(l->off.tstate_native_thread_id, 160);
  EXPECT_EQ(l->off.cframe_current_frame, 8);
  EXPECT_EQ(l->off.frame_code, 32);
  EXPECT_EQ(l->off.frame_previous, 48);
  EXPECT_EQ(l->off.frame_instr, 56);
  EXPECT_EQ(l->off.frame_owner, 69);
  EXPECT_EQ(l->off.code_filename, 112);
  EXPECT_EQ(l->off.code_name, 120);
  EXPECT_EQ(l->off.code_qualname, 128);
  EXPECT_EQ(l->off.code_linetable, 136);
  EXPECT_EQ(l->off.code_adaptive, 184);
  auto l12 = builtin_layout(3, 12);
  ASSERT_TRUE(l12);
  EXPECT_EQ(l12->off.unicode_ascii_size, 40);  // PyASCIIObject lost wstr in 3.12
  EXPECT_TRUE(l12->long_tagged);
  EXPECT_EQ(l12->shim_owner, 3);
  for (int minor = 6; minor <= 12; ++minor) {
    auto row = builtin_layout(3, minor);
    ASSERT_TRUE(row) << minor;
    EXPECT_NE(row->source.find("3." + std::to_string(minor)), std::string::npos) << row->source;
  }
  EXPECT_FALSE(builtin_layout(3, 13));
  EXPECT_FALSE(builtin_layout(2, 7));
}

}  // namespace
}  // namespace hangscan::python

namespace hangscan::python {
namespace {

// 3.14t: a thread that specialized a code object runs its own copy of the bytecode
// (co_tlbc->entries[frame->tlbc_index]); the line is found in that copy.
TEST(WalkDecode314t, LinesOfThreadLocalBytecodeCopies) {
  FakePython py(layout_for(kFreeThreaded + 14));
  const PyOffsets& o = py.off();
  std::uint64_t top = py.chain({{"hot", "/src/hot.py", 10, 14, true, {}}});
  py.thread(top, 7, 0x1000);
  std::uint64_t code = py.get_as<std::uint64_t>(top + o.frame_code) & ~std::uint64_t{3};
  std::uint64_t own = code + static_cast<std::uint64_t>(o.code_adaptive);
  std::uint64_t at = py.get_as<std::uint64_t>(top + o.frame_instr) - own;
  std::uint64_t copy = py.alloc(256);
  std::uint64_t array = py.alloc(24);  // _PyCodeArray {size, entries[2]}
  py.put_as<std::int64_t>(array, 2);
  py.put_u64(array + 8, own);
  py.put_u64(array + 16, copy);
  py.put_u64(code + o.code_tlbc, array);
  py.put_as<std::int32_t>(top + o.frame_tlbc_index, 1);
  py.put_u64(top + o.frame_instr, copy + at);
  {
    auto mem = py.memory();
    PythonReader reader(py.located());
    RawPythonState raw = reader.walk(*mem, false);
    ASSERT_EQ(raw.threads.at(0).frames.size(), 1u);
    EXPECT_EQ(raw.threads[0].frames[0].bytecode, copy);
    EXPECT_EQ(reader.decode(raw, *mem)[0].frames[0].frame.line, 14);
  }
  // An index the array does not have: no line rather than a wrong one.
  py.put_as<std::int32_t>(top + o.frame_tlbc_index, 5);
  auto mem = py.memory();
  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(*mem, false);
  EXPECT_EQ(raw.threads.at(0).frames.at(0).bytecode, kUnresolvedBytecode);
  EXPECT_FALSE(reader.decode(raw, *mem)[0].frames[0].frame.line.has_value());
}

}  // namespace
}  // namespace hangscan::python
