// Locating the interpreter: version hints, _Py_DebugOffsets parsing, the .data/.bss scan, and
// the strategy chain over a fake Target that maps real libpython files from pyenv.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "fake_python.h"
#include "python/debug_offsets.h"
#include "python/locator.h"
#include "target/symbol_lookup.h"

namespace hangscan::python {
namespace {

namespace fs = std::filesystem;
using testing::FakePython;

class FakeTarget : public Target {
 public:
  FakeTarget(std::vector<Mapping> maps, MemoryReader& mem) : maps_(std::move(maps)), mem_(mem) {}
  int pid() const override { return 1; }
  bool is_live() const override { return false; }
  std::string describe() const override { return "fake"; }
  MemoryReader& memory() override { return mem_; }
  const std::vector<Mapping>& mappings() const override { return maps_; }
  std::optional<std::string> local_path(const Mapping& m) const override { return m.path; }
  Result<std::unique_ptr<Freeze>> freeze(const Deadline&) override {
    return Error(Errc::unsupported, "fake");
  }
  void describe_process(ProcessSnapshot&) override {}
  void describe_thread(ThreadSnapshot&) override {}
  std::vector<std::string> environment() override { return {}; }

 private:
  std::vector<Mapping> maps_;
  MemoryReader& mem_;
};

std::string pyenv_root() {
  if (const char* r = std::getenv("PYENV_ROOT")) return r;
  if (const char* h = std::getenv("HOME")) return std::string(h) + "/.pyenv";
  return "/root/.pyenv";
}

// The newest pyenv build of 3.minor's shared libpython, or "" when absent.
std::string pyenv_libpython(int minor) {
  std::string found;
  std::error_code ec;
  std::string prefix = "3." + std::to_string(minor) + ".";
  for (const auto& e : fs::directory_iterator(pyenv_root() + "/versions", ec)) {
    std::string v = e.path().filename().string();
    if (v.rfind(prefix, 0) != 0) continue;
    for (const char* lib : {"libpython3.%d.so.1.0", "libpython3.%dm.so.1.0"}) {
      char name[64];
      std::snprintf(name, sizeof(name), lib, minor);
      fs::path p = e.path() / "lib" / name;
      if (fs::exists(p)) found = p.string();
    }
  }
  return found;
}

// Maps every PT_LOAD of `path` at `base` the way the loader would.
std::vector<Mapping> map_like_loader(const std::string& path, std::uint64_t base) {
  auto elf = ElfSymbols::open(path);
  std::vector<Mapping> out;
  if (!elf) return out;
  for (const auto& l : elf->loads()) {
    Mapping m;
    m.start = base + (l.vaddr & ~std::uint64_t{0xfff});
    m.end = base + ((l.vaddr + l.memsz + 0xfff) & ~std::uint64_t{0xfff});
    m.offset = l.offset & ~std::uint64_t{0xfff};
    m.perms = "r--p";
    m.path = path;
    out.push_back(m);
  }
  return out;
}

TEST(VersionFromPath, NamesAndPyenvDirectories) {
  auto h = version_from_path("/usr/bin/python3.11");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->minor, 11);
  EXPECT_EQ(h->full, "3.11");
  h = version_from_path("/root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->full, "3.8.18");
  h = version_from_path("/opt/versions/3.7.16/lib/libpython3.6m.so.1.0");  // dir disagrees
  ASSERT_TRUE(h);
  EXPECT_EQ(h->full, "3.6");
  EXPECT_FALSE(version_from_path("/usr/bin/bash"));
  EXPECT_FALSE(version_from_path("/usr/lib/python3.11/lib-dynload/x.so"));  // basename only
}

TEST(DebugOffsets, Parses313And314Layouts) {
  for (int minor : {13, 14}) {
    std::uint64_t hex = 0x03000000u | (static_cast<std::uint64_t>(minor) << 16) | 0x02f0;
    auto blob = testing::fake_debug_offsets(minor, hex);
    std::uint64_t got_hex = 0;
    auto l = parse_debug_offsets(blob.data(), blob.size(), &got_hex);
    ASSERT_TRUE(l.ok()) << l.error().what();
    EXPECT_EQ(got_hex, hex);
    EXPECT_EQ(l->minor, minor);
    EXPECT_EQ(l->frame_model, FrameModel::interp_frame_313);
    EXPECT_EQ(l->stackref, minor >= 14);
    EXPECT_EQ(l->off.runtime_interpreters_head, 648);
    EXPECT_EQ(l->off.interp_threads_head, 88);
    EXPECT_EQ(l->off.interp_gil, 5000);
    EXPECT_EQ(l->off.gil_locked, 16);
    EXPECT_EQ(l->off.gil_last_holder, 8);
    EXPECT_EQ(l->off.tstate_frame, 80);
    EXPECT_EQ(l->off.tstate_native_thread_id, 176);
    EXPECT_EQ(l->off.frame_owner, 74);
    EXPECT_EQ(l->off.frame_localsplus, 80);
    EXPECT_EQ(l->off.code_adaptive, 208);
    EXPECT_EQ(l->off.code_varnames, 96);
    EXPECT_EQ(l->off.unicode_ascii_size, 40);
    EXPECT_EQ(l->off.long_digits, 24);
    EXPECT_NE(l->source.find("3." + std::to_string(minor) + ".2"), std::string::npos);
  }
  // 3.14 inserted threads_main after threads_head, and more: the field lists differ.
  const auto& f13 = debug_offsets_fields(13);
  const auto& f14 = debug_offsets_fields(14);
  EXPECT_GT(f14.size(), f13.size());
  auto at = [](const std::vector<std::string>& f, const char* n) {
    return std::find(f.begin(), f.end(), n) - f.begin();
  };
  EXPECT_EQ(at(f14, "interpreter_state.threads_main"),
            at(f14, "interpreter_state.threads_head") + 1);
  EXPECT_EQ(at(f13, "interpreter_state.gc"), at(f13, "interpreter_state.threads_head") + 1);
  EXPECT_EQ(at(f14, "interpreter_frame.stackpointer"), at(f14, "interpreter_frame.owner") + 1);
  EXPECT_EQ(f14.back(), "debugger_support.debugger_script_path_size");
}

TEST(DebugOffsets, FreeThreadedBuildsShiftWhatFollowsTheLargerObjectHeader) {
  for (int minor : {13, 14}) {
    std::uint64_t hex = 0x03000000u | (static_cast<std::uint64_t>(minor) << 16) | 0xf0;
    auto plain = testing::fake_debug_offsets(minor, hex);
    auto ft = testing::fake_debug_offsets(minor, hex, true);
    auto a = parse_debug_offsets(plain.data(), plain.size());
    auto b = parse_debug_offsets(ft.data(), ft.size());
    ASSERT_TRUE(a.ok() && b.ok()) << (b.ok() ? "" : b.error().what());
    EXPECT_FALSE(a->free_threaded);
    EXPECT_TRUE(b->free_threaded);
    EXPECT_EQ(a->off.object_head, 16);
    EXPECT_EQ(b->off.object_head, 32);  // ob_type at 24: ob_tid, ob_ref_local, ob_ref_shared
    // Fields of PyObject-headed structs taken from the default build's headers move by 16.
    EXPECT_EQ(b->off.type_basicsize, a->off.type_basicsize + 16);
    EXPECT_EQ(b->off.type_flags, a->off.type_flags + 16);
    EXPECT_EQ(b->off.heaptype_cached_keys, a->off.heaptype_cached_keys + 16);
    EXPECT_EQ(b->off.module_dict, a->off.module_dict + 16);
    // Dict keys are no PyObject (dk_mutex fills padding): they stay.
    EXPECT_EQ(b->off.keys_indices, a->off.keys_indices);
    EXPECT_EQ(b->off.keys_nentries, a->off.keys_nentries);
    // Per-thread bytecode (3.14t only).
    EXPECT_EQ(b->off.frame_tlbc_index, minor == 14 ? 76 : -1);
    EXPECT_EQ(b->off.code_tlbc, minor == 14 ? 192 : -1);
    EXPECT_EQ(a->off.code_tlbc, -1);
  }
}

TEST(DebugOffsets, RefusesWhatItCannotRead) {
  auto blob = testing::fake_debug_offsets(13, 0x030d00f0);
  auto future = blob;
  std::uint64_t hex15 = 0x030f00a1;
  std::memcpy(future.data() + 8, &hex15, 8);
  auto r = parse_debug_offsets(future.data(), future.size());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::unsupported);
  EXPECT_NE(r.error().message.find("3.15.0a1"), std::string::npos) << r.error().message;

  auto nocookie = blob;
  nocookie[0] = 'y';
  EXPECT_EQ(parse_debug_offsets(nocookie.data(), nocookie.size()).error().code, Errc::bad_data);
  EXPECT_FALSE(parse_debug_offsets(blob.data(), 40).ok());  // short

  auto absurd = blob;
  std::uint64_t huge = std::uint64_t{1} << 40;
  std::memcpy(absurd.data() + 8 + 8 * 4, &huge, 8);  // runtime_state.interpreters_head
  EXPECT_EQ(parse_debug_offsets(absurd.data(), absurd.size()).error().code, Errc::bad_data);
  EXPECT_EQ(version_from_hex(0x030b02f0), "3.11.2");
  EXPECT_EQ(version_from_hex(0x030e00c1), "3.14.0rc1");
}

TEST(DebugOffsets, RealPython313FromTheLibraryOnDisk) {
  std::string lib = pyenv_libpython(13);
  if (lib.empty()) GTEST_SKIP() << "no pyenv 3.13 build";
  auto elf = ElfSymbols::open(lib);
  ASSERT_TRUE(elf);
  auto sym = elf->symbol("_PyRuntime");
  ASSERT_TRUE(sym);
  std::vector<std::uint8_t> raw(debug_offsets_max_size());
  std::size_t got = elf->read_vaddr(sym->value, raw.data(), raw.size());
  auto l = parse_debug_offsets(raw.data(), got);
  ASSERT_TRUE(l.ok()) << l.error().what();
  EXPECT_EQ(l->minor, 13);
  // Stable facts of every 64-bit CPython 3.12+.
  EXPECT_EQ(l->off.tstate_next, 8);
  EXPECT_EQ(l->off.tstate_interp, 16);
  EXPECT_EQ(l->off.object_type, 8);
  EXPECT_EQ(l->off.type_name, 24);
  EXPECT_EQ(l->off.tuple_items, 24);
  EXPECT_EQ(l->off.unicode_ascii_size, 40);
  EXPECT_EQ(l->off.frame_previous, 8);
  EXPECT_EQ(l->off.frame_code, 0);
}

TEST(Scan, FindsThePointerToAPlausibleInterpreter) {
  FakePython py(*builtin_layout(3, 9));
  std::uint64_t ts = py.thread(0, 1, 0x10);
  std::uint64_t interp = py.interp();
  std::uint64_t section = py.alloc(4096);
  py.put_u64(section + 8, interp + 8);  // near miss: not an interpreter
  py.put_u64(section + 16, ts);         // a thread state: its "threads" do not point back
  py.put_u64(section + 808, interp);
  auto mem = py.memory();
  auto at = scan_for_interp_head(*mem, section, 4096, py.off());
  ASSERT_TRUE(at);
  EXPECT_EQ(*at, section + 808);
  EXPECT_FALSE(scan_for_interp_head(*mem, section, 800, py.off()));
}

TEST(Locate, NonPythonProcessIsNotFoundQuietly) {
  BufferMemory mem;
  std::vector<Mapping> maps = map_like_loader("/bin/true", 0x400000);
  ASSERT_FALSE(maps.empty());
  FakeTarget t(maps, mem);
  std::vector<std::string> log;
  auto r = PythonReader::locate(t, &log);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::not_found);
  EXPECT_FALSE(log.empty());  // the strategies tried are still logged for --verbose
  FakeTarget empty({}, mem);
  EXPECT_EQ(PythonReader::locate(empty, nullptr).error().code, Errc::not_found);
}

TEST(Locate, SharedLibpythonBySymbolWithVersionFromTheFile) {
  std::string lib = pyenv_libpython(11);
  if (lib.empty()) GTEST_SKIP() << "no pyenv 3.11 build";
  BufferMemory mem;  // nothing readable: Py_Version must come from the file on disk
  const std::uint64_t base = 0x7f0000000000;
  FakeTarget t(map_like_loader(lib, base), mem);
  std::vector<std::string> log;
  auto r = PythonReader::locate(t, &log);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ((*r)->locator(), "symbol _PyRuntime");
  EXPECT_EQ((*r)->version().rfind("3.11.", 0), 0u) << (*r)->version();
  auto sym = ElfSymbols::open(lib)->symbol("_PyRuntime");
  ModuleSymbols syms(t);
  auto found = syms.find("_PyRuntime", "libpython");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->address, base + sym->value);
  bool logged = false;
  for (const auto& line : log) logged |= line.find("Py_Version") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST(Locate, Python36ByInterpHeadSymbol) {
  std::string lib = pyenv_libpython(6);
  if (lib.empty()) GTEST_SKIP() << "no pyenv 3.6 build";
  BufferMemory mem;
  FakeTarget t(map_like_loader(lib, 0x7f0000000000), mem);
  auto r = locate_interpreter(t, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(r->locator, "symbol interp_head (3.6)");
  EXPECT_EQ(r->layout.minor, 6);
  EXPECT_NE(r->gil_current_ptr, 0u);  // _PyThreadState_Current marks the GIL holder
  EXPECT_EQ(r->version.rfind("3.6", 0), 0u);
}

// Debian's python3.11 carries its own runtime; an extension linked to libpython3.11.so.1.0
// maps a second one, never initialized. The fabricated process below maps both (the
// executable at its fixed address, the library like the loader) and gives one of them an
// interpreter with a thread; the locator must read that one, whichever it is.
class TwoRuntimes : public ::testing::Test {
 protected:
  static constexpr const char* kExe = "/usr/bin/python3.11";
  static constexpr const char* kLib = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
  static constexpr std::uint64_t kLibBase = 0x7f0000000000;

  void SetUp() override {
    if (!fs::exists(kExe) || !fs::exists(kLib))
      GTEST_SKIP() << "Debian python3.11 or libpython3.11 missing (tools/deps.sh test)";
    maps_ = map_like_loader(kExe, 0);
    auto lib = map_like_loader(kLib, kLibBase);
    maps_.insert(maps_.end(), lib.begin(), lib.end());
    exe_runtime_ = ElfSymbols::open(kExe)->symbol("_PyRuntime")->value;
    lib_runtime_ = kLibBase + ElfSymbols::open(kLib)->symbol("_PyRuntime")->value;
  }

  // Memory where the runtime at `live` has the fabricated interpreter, the other none.
  std::unique_ptr<BufferMemory> memory(FakePython& py, std::uint64_t live) {
    py.thread(0, 4242, 0x7f0000001000);
    auto mem = py.memory();
    for (std::uint64_t rt : {exe_runtime_, lib_runtime_}) {
      std::vector<std::uint8_t> bytes(4096, 0);
      if (rt == live) {
        std::uint64_t interp = py.interp();
        std::memcpy(&bytes[static_cast<std::size_t>(py.off().runtime_interpreters_head)], &interp,
                    8);
      }
      mem->add(rt, std::move(bytes));
    }
    return mem;
  }

  std::vector<Mapping> maps_;
  std::uint64_t exe_runtime_ = 0;
  std::uint64_t lib_runtime_ = 0;
};

TEST_F(TwoRuntimes, ReadsTheExecutablesRuntimeWhenTheLibrarysNeverRan) {
  FakePython py(*builtin_layout(3, 11));
  auto mem = memory(py, exe_runtime_);
  FakeTarget t(maps_, *mem);
  std::vector<std::string> log;
  auto r = locate_interpreter(t, &log);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(r->module, kExe);
  EXPECT_EQ(r->interp_head_ptr, exe_runtime_ + 40);
  EXPECT_TRUE(r->more_runtimes.empty());
  EXPECT_EQ(r->version, "3.11.2");
  PythonReader reader(*r);
  auto raw = reader.walk(*mem, false);
  ASSERT_EQ(raw.threads.size(), 1u);
  EXPECT_EQ(raw.threads[0].native_tid, 4242);
  std::string said;
  for (const auto& line : log) said += line + "\n";
  EXPECT_NE(said.find(std::string("runtime in ") + kLib + ": not initialized"), std::string::npos)
      << said;
}

TEST_F(TwoRuntimes, ReadsTheLibrarysRuntimeWhenItIsTheLiveOne) {
  FakePython py(*builtin_layout(3, 11));
  auto mem = memory(py, lib_runtime_);
  FakeTarget t(maps_, *mem);
  auto r = locate_interpreter(t, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(r->module, kLib);
  EXPECT_EQ(r->interp_head_ptr, lib_runtime_ + 40);
}

TEST_F(TwoRuntimes, BothLiveAreBothWalked) {
  FakePython py(*builtin_layout(3, 11));
  auto mem = memory(py, lib_runtime_);
  // A second interpreter with its own thread, for the executable's runtime.
  const PyOffsets& o = py.off();
  std::uint64_t interp = py.alloc(8192);
  std::uint64_t ts = py.alloc(512);
  py.put_u64(ts + o.tstate_interp, interp);
  py.put_u64(ts + o.tstate_native_thread_id, 4343);
  py.put_u64(interp + o.interp_threads_head, ts);
  mem = py.memory();
  for (std::uint64_t rt : {exe_runtime_, lib_runtime_}) {
    std::vector<std::uint8_t> bytes(4096, 0);
    std::uint64_t head = rt == lib_runtime_ ? py.interp() : interp;
    std::memcpy(&bytes[40], &head, 8);
    mem->add(rt, std::move(bytes));
  }
  FakeTarget t(maps_, *mem);
  auto r = locate_interpreter(t, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(r->module, kExe);  // the executable's runtime first: it names the version
  ASSERT_EQ(r->more_runtimes.size(), 1u);
  EXPECT_EQ(r->more_runtimes[0].module, kLib);
  EXPECT_EQ(r->more_runtimes[0].interp_head_ptr, lib_runtime_ + 40);
  PythonReader reader(*r);
  auto raw = reader.walk(*mem, false);
  ASSERT_EQ(raw.threads.size(), 2u);
  EXPECT_EQ(raw.threads[0].native_tid, 4343);
  EXPECT_EQ(raw.threads[1].native_tid, 4242);
  EXPECT_EQ(raw.interpreters.size(), 2u);
}

TEST_F(TwoRuntimes, NeitherLiveReadsTheLibraryAsBefore) {
  FakePython py(*builtin_layout(3, 11));
  auto mem = memory(py, 0);
  FakeTarget t(maps_, *mem);
  auto r = locate_interpreter(t, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(r->module, kLib);
  EXPECT_TRUE(r->more_runtimes.empty());
}

}  // namespace
}  // namespace hangscan::python
