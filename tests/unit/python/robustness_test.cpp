// What a running or corrupt process does to its memory: loops, absurd lengths, torn reads,
// threads vanishing mid-walk. Bounded work and a diagnostic, never a crash or a hang.
#include <gtest/gtest.h>

#include <chrono>

#include "fake_python.h"
#include "python/objects.h"
#include "python/python_reader.h"
#include "python/value_repr.h"

namespace hangscan::python {
namespace {

using testing::FakeFrame;
using testing::FakePython;

// A reader over another one with holes: reads touching [hole_start, hole_end) fail, as when a
// page is unmapped or a core omitted it. Counts reads so tests can bound the work.
class HoleyMemory : public MemoryReader {
 public:
  explicit HoleyMemory(MemoryReader& inner) : inner_(inner) {}
  void hole(std::uint64_t start, std::uint64_t len) { holes_.push_back({start, start + len}); }
  std::size_t read(std::uint64_t addr, void* buf, std::size_t len) override {
    ++reads;
    for (const auto& [s, e] : holes_) {
      if (addr < e && addr + len > s) {
        if (addr >= s) return 0;
        return inner_.read(addr, buf, static_cast<std::size_t>(s - addr));
      }
    }
    return inner_.read(addr, buf, len);
  }
  std::size_t reads = 0;

 private:
  MemoryReader& inner_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> holes_;
};

PyLayout l311() { return *builtin_layout(3, 11); }

TEST(Robustness, FrameChainThatLoopsIsCut) {
  for (int minor : {8, 11, 12}) {
    FakePython py(*builtin_layout(3, minor));
    std::uint64_t a = py.frame({"a", "/a.py", 1, 2, true, {}}, 0);
    std::uint64_t b = py.frame({"b", "/a.py", 1, 2, true, {}}, a);
    py.put_u64(a + py.off().frame_previous, b);  // a -> b -> a -> ...
    py.thread(b, 5, 0x10);
    auto mem = py.memory();
    PythonReader reader(py.located());
    RawPythonState raw = reader.walk(*mem, true);
    ASSERT_EQ(raw.threads.size(), 1u);
    EXPECT_EQ(raw.threads[0].frames.size(), 2u) << minor;
    EXPECT_NE(raw.threads[0].error.find("loops"), std::string::npos) << raw.threads[0].error;
    auto stacks = reader.decode(raw, *mem);
    ASSERT_EQ(stacks[0].notes.size(), 1u);
    EXPECT_EQ(stacks[0].frames.size(), 2u);
  }
}

TEST(Robustness, EndlessFrameChainIsCapped) {
  FakePython py(l311());
  std::vector<FakeFrame> frames(kMaxFrames + 10, FakeFrame{"deep", "/d.py", 1, 2, true, {}});
  // Reuse one code object for all frames: fabricate one, then chain raw frames.
  std::uint64_t prev = 0;
  std::uint64_t first = py.frame(frames[0], 0);
  std::uint64_t code = py.get_as<std::uint64_t>(first + py.off().frame_code);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    std::uint64_t fr = py.alloc(static_cast<std::size_t>(py.off().frame_localsplus));
    py.put_u64(fr + py.off().frame_previous, prev);
    py.put_u64(fr + py.off().frame_code, code);
    prev = fr;
  }
  py.thread(prev, 5, 0x10);
  auto mem = py.memory();
  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(*mem, false);
  EXPECT_EQ(raw.threads[0].frames.size(), kMaxFrames);
  EXPECT_NE(raw.threads[0].error.find("cut"), std::string::npos);
}

TEST(Robustness, ThreadListThatLoopsIsCut) {
  FakePython py(l311());
  std::uint64_t t1 = py.thread(0, 1, 0x10);
  std::uint64_t t2 = py.thread(0, 2, 0x20);
  py.put_u64(t1 + py.off().tstate_next, t2);  // t2 -> t1 -> t2
  auto mem = py.memory();
  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(*mem, false);
  EXPECT_EQ(raw.threads.size(), 2u);
  ASSERT_EQ(raw.diagnostics.size(), 1u);
  EXPECT_NE(raw.diagnostics[0].find("loops"), std::string::npos);
}

TEST(Robustness, AbsurdStringLengthGivesANoteNotAnAllocation) {
  FakePython py(l311());
  std::uint64_t top = py.frame({"f", "/f.py", 1, 2, true, {}}, 0);
  std::uint64_t code = py.get_as<std::uint64_t>(top + py.off().frame_code);
  std::uint64_t name = py.get_as<std::uint64_t>(code + py.off().code_qualname);
  py.put_as<std::int64_t>(name + py.off().unicode_length, std::int64_t{1} << 60);
  py.thread(top, 5, 0x10);
  auto mem = py.memory();
  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(*mem, false);
  auto stacks = reader.decode(raw, *mem);
  ASSERT_EQ(stacks.size(), 1u);
  EXPECT_TRUE(stacks[0].frames.empty());
  ASSERT_EQ(stacks[0].notes.size(), 1u);
  EXPECT_NE(stacks[0].notes[0].find("unreadable"), std::string::npos) << stacks[0].notes[0];

  // A length that is large but not absurd is truncated to the cap.
  std::uint64_t s = py.str(std::string(100, 'q'));
  auto mem2 = py.memory();
  ObjectReader objects2(*mem2, py.layout());
  bool cut = false;
  auto text = objects2.read_str(s, 10, &cut);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, std::string(10, 'q'));
  EXPECT_TRUE(cut);
}

TEST(Robustness, AbsurdTupleAndBytesSizesAreRefused) {
  FakePython py(l311());
  std::uint64_t t = py.tuple({1, 2});
  py.put_as<std::int64_t>(t + py.off().tuple_size, std::int64_t{1} << 40);
  std::uint64_t b = py.bytes("xy");
  py.put_as<std::int64_t>(b + py.off().bytes_size, -5);
  auto mem = py.memory();
  ObjectReader objects(*mem, py.layout());
  EXPECT_FALSE(objects.tuple_items(t));
  EXPECT_FALSE(objects.read_bytes(b));
}

TEST(Robustness, CorruptDictsAndContainersAreBoundedAndNamed) {
  for (int minor : {8, 11, 13}) {
    PyLayout l = minor < 13 ? *builtin_layout(3, minor) : *builtin_layout(3, 12);
    if (minor == 13) {
      l.minor = 13;
      l.instance_dict = InstanceDict::inline_313;
    }
    FakePython py(l);
    std::uint64_t good = py.dict({{py.str("k"), py.integer(1)}});
    std::uint64_t absurd = py.dict({{py.str("k"), py.integer(1)}});
    std::uint64_t keys = 0;
    auto mem0 = py.memory();
    mem0->read_obj(absurd + py.off().dict_keys, keys);
    py.put_as<std::int64_t>(keys + py.off().keys_nentries, std::int64_t{1} << 50);
    std::uint64_t unmapped = py.dict({});
    py.put_as<std::int64_t>(unmapped + 16, 3);  // ma_used says 3, keys pointer is null
    std::uint64_t self_list = py.list({0});
    std::uint64_t items = 0;
    mem0 = py.memory();
    mem0->read_obj(self_list + py.off().list_items, items);
    py.put_u64(items, self_list);  // a list that holds itself
    auto mem = py.memory();
    HoleyMemory counted(*mem);
    ObjectReader objects(counted, py.layout());
    EXPECT_EQ(objects.dict_get(good, "k").has_value(), true) << minor;
    EXPECT_FALSE(objects.dict_items(absurd, 100)) << minor;
    EXPECT_FALSE(objects.dict_items(unmapped, 100)) << minor;
    EXPECT_FALSE(objects.attribute(py.object("Thing", 64), "_name")) << minor;
    ValueRenderer render(objects, py.layout());
    EXPECT_EQ(render.render(self_list), "[[...]]") << minor;
    EXPECT_EQ(render.render(unmapped), "<unreadable dict>") << minor;
    EXPECT_LT(counted.reads, 200u) << minor;
  }
}

TEST(Robustness, TornFrameReadCutsTheChainWithAReason) {
  FakePython py(l311());
  std::uint64_t outer = py.frame({"outer", "/o.py", 1, 2, true, {}}, 0);
  std::uint64_t inner = py.frame({"inner", "/o.py", 1, 2, true, {}}, outer);
  py.thread(inner, 5, 0x10);
  auto buffer = py.memory();
  HoleyMemory mem(*buffer);
  mem.hole(outer + 16, 8);  // the middle of the outer frame is unreadable
  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(mem, false);
  ASSERT_EQ(raw.threads.size(), 1u);
  EXPECT_EQ(raw.threads[0].frames.size(), 1u);
  EXPECT_NE(raw.threads[0].error.find("cannot read Python frame"), std::string::npos);
}

TEST(Robustness, ThreadVanishingMidWalkEndsTheListWithADiagnostic) {
  FakePython py(l311());
  std::uint64_t gone = py.thread(0, 1, 0x10);
  std::uint64_t head = py.thread(py.frame({"f", "/f.py", 1, 2, true, {}}, 0), 2, 0x20);
  auto buffer = py.memory();
  HoleyMemory mem(*buffer);
  mem.hole(gone, 512);  // freed thread state: unmapped
  PythonReader reader(py.located());
  RawPythonState raw = reader.walk(mem, false);
  ASSERT_EQ(raw.threads.size(), 2u);
  EXPECT_EQ(raw.threads[0].tstate, head);
  EXPECT_EQ(raw.threads[0].frames.size(), 1u);
  EXPECT_FALSE(raw.threads[1].error.empty());
  ASSERT_EQ(raw.diagnostics.size(), 1u);
  EXPECT_NE(raw.diagnostics[0].find("vanished"), std::string::npos);
}

TEST(Robustness, UnreadableInterpreterHeadIsADiagnostic) {
  FakePython py(l311());
  Located loc = py.located();
  loc.interp_head_ptr = 0x1234;  // nothing mapped there
  auto mem = py.memory();
  PythonReader reader(loc);
  RawPythonState raw = reader.walk(*mem, true);
  EXPECT_TRUE(raw.threads.empty());
  ASSERT_EQ(raw.diagnostics.size(), 1u);
}

TEST(Robustness, NonCodeObjectInAFrameIsSkippedWithANote) {
  FakePython py(*builtin_layout(3, 12));
  std::uint64_t top = py.frame({"f", "/f.py", 1, 2, true, {}}, 0);
  std::uint64_t code = py.get_as<std::uint64_t>(top + py.off().frame_code);
  py.put_u64(code + py.off().object_type, py.type("function"));
  py.thread(top, 5, 0x10);
  auto mem = py.memory();
  PythonReader reader(py.located());
  auto stacks = reader.decode(reader.walk(*mem, false), *mem);
  EXPECT_TRUE(stacks[0].frames.empty());
  ASSERT_EQ(stacks[0].notes.size(), 1u);
  EXPECT_NE(stacks[0].notes[0].find("not a code object"), std::string::npos);
}

TEST(Robustness, GarbageEverywhereTerminatesQuickly) {
  // A memory full of pointers into itself: every read succeeds and nothing makes sense.
  BufferMemory mem;
  std::vector<std::uint8_t> junk(1 << 16);
  for (std::size_t i = 0; i < junk.size(); i += 8) {
    std::uint64_t p = 0x50000 + ((i * 2654435761u) % junk.size() & ~std::size_t{7});
    std::memcpy(&junk[i], &p, 8);
  }
  mem.add(0x50000, junk);
  for (int minor : {6, 8, 10, 11, 12}) {
    Located loc;
    loc.layout = *builtin_layout(3, minor);
    loc.interp_head_ptr = 0x50000;
    PythonReader reader(loc);
    auto start = std::chrono::steady_clock::now();
    RawPythonState raw = reader.walk(mem, true);
    auto stacks = reader.decode(raw, mem);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
    EXPECT_LE(raw.threads.size(), kMaxThreads);
    EXPECT_LT(ms, 5000) << minor;
  }
}

}  // namespace
}  // namespace hangscan::python
