// DebugImage must answer exactly as libdw does on the original file, for zlib (SHF_COMPRESSED)
// and zlib-gnu (.zdebug_*) debug sections, and survive damaged files. The test binary itself
// is the module: it is built with -g; objcopy makes the compressed copies.
#include "unwind/debug_image.h"
#include "unwind/dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "target/core_modules.h"

namespace hangscan {
namespace {

namespace fs = std::filesystem;

std::string self_path() { return fs::read_symlink("/proc/self/exe").string(); }

bool run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

class DebugImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("hs-debug-image-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    exe_ = self_path();
    Inflater probe;
    auto plain = DebugImage::open(exe_, probe);
    if (plain == nullptr) GTEST_SKIP() << "the test binary has no DWARF (not a -g build)";
    if (!run("objcopy --version")) GTEST_SKIP() << "objcopy is not installed";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string compressed(const std::string& how) {
    std::string out = (dir_ / ("self." + how)).string();
    EXPECT_TRUE(run("objcopy --compress-debug-sections=" + how + " " + exe_ + " " + out));
    return out;
  }

  fs::path dir_;
  std::string exe_;
  Inflater inflater_;
};

struct Answer {
  std::string file;
  int line = 0;
  std::vector<std::string> scopes;
  bool operator==(const Answer&) const = default;
};

// Every row address of this file's CU, from the original file's line table.
std::vector<Dwarf_Addr> sample_addresses(Dwarf* dbg) {
  std::vector<Dwarf_Addr> out;
  Dwarf_Off off = 0;
  Dwarf_Off next = 0;
  std::size_t header = 0;
  while (dwarf_nextcu(dbg, off, &next, &header, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cu;
    if (dwarf_offdie(dbg, off + header, &cu) != nullptr) {
      const char* name = dwarf_diename(&cu);
      Dwarf_Lines* lines = nullptr;
      std::size_t n = 0;
      if (name != nullptr && std::string(name).ends_with("debug_image_test.cpp") &&
          dwarf_getsrclines(&cu, &lines, &n) == 0) {
        std::size_t step = std::max<std::size_t>(1, n / 40);  // ~40 rows spread over the CU
        for (std::size_t i = 0; i < n; i += step) {
          Dwarf_Addr a = 0;
          if (dwarf_lineaddr(dwarf_onesrcline(lines, i), &a) == 0) out.push_back(a);
        }
      }
    }
    off = next;
  }
  return out;
}

Answer answer(Dwarf* dbg, Dwarf_Addr a) {
  Answer out;
  Dwarf_Die cu;
  if (dwarf_addrdie(dbg, a, &cu) == nullptr) return out;
  if (Dwarf_Line* l = dwarf_getsrc_die(&cu, a)) {
    if (const char* f = dwarf_linesrc(l, nullptr, nullptr)) out.file = f;
    dwarf_lineno(l, &out.line);
  }
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes(&cu, a, &scopes);
  for (int i = 0; i < n; ++i) {
    const char* name = dwarf_diename(&scopes[i]);
    out.scopes.push_back(std::to_string(dwarf_tag(&scopes[i])) + ":" + (name ? name : ""));
  }
  std::free(scopes);
  return out;
}

void expect_same_answers(const std::string& original, const DebugImage& image) {
  int fd = ::open(original.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Dwarf* ref = dwarf_begin(fd, DWARF_C_READ);
  ASSERT_NE(ref, nullptr);
  auto addrs = sample_addresses(ref);
  ASSERT_GT(addrs.size(), 5u);
  std::size_t with_line = 0;
  for (auto a : addrs) {
    Answer want = answer(ref, a);  // end-of-sequence rows have no line: compared all the same
    if (!want.file.empty()) ++with_line;
    EXPECT_EQ(answer(image.dwarf(), a), want) << std::hex << a;
  }
  EXPECT_GT(with_line, addrs.size() / 2);
  dwarf_end(ref);
  ::close(fd);
}

TEST_F(DebugImageTest, UncompressedFileIsReadAsItIs) {
  auto img = DebugImage::open(exe_, inflater_);
  ASSERT_NE(img, nullptr);
  EXPECT_EQ(img->inflated_bytes(), 0u);
  expect_same_answers(exe_, *img);
}

// SHF_COMPRESSED (zlib) and the older .zdebug (zlib-gnu) sections, with libdeflate when present.
TEST_F(DebugImageTest, CompressedSectionsAnswerLikeTheOriginal) {
  for (const char* how : {"zlib", "zlib-gnu"}) {
    auto img = DebugImage::open(compressed(how), inflater_);
    ASSERT_NE(img, nullptr) << how;
    EXPECT_GT(img->inflated_bytes(), 0u) << how;
    expect_same_answers(exe_, *img);
  }
}

TEST_F(DebugImageTest, WithoutLibdeflateLibelfInflates) {
  Inflater zlib_only(false);
  EXPECT_FALSE(zlib_only.available());
  for (const char* how : {"zlib", "zlib-gnu"}) {
    auto img = DebugImage::open(compressed(how), zlib_only);
    ASSERT_NE(img, nullptr) << how;
    EXPECT_GT(img->inflated_bytes(), 0u) << how;
    expect_same_answers(exe_, *img);
  }
}

// Offset and size of a section in the file, read with libelf.
std::optional<std::pair<std::uint64_t, std::uint64_t>> section_in_file(const std::string& path,
                                                                       const std::string& want) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  std::optional<std::pair<std::uint64_t, std::uint64_t>> out;
  std::size_t shstrndx = 0;
  if (elf != nullptr && elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn* s = elf_nextscn(elf, nullptr); s != nullptr; s = elf_nextscn(elf, s)) {
      GElf_Shdr sh;
      const char* name = gelf_getshdr(s, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : nullptr;
      if (name != nullptr && want == name) out.emplace(sh.sh_offset, sh.sh_size);
    }
  }
  if (elf != nullptr) elf_end(elf);
  ::close(fd);
  return out;
}

TEST_F(DebugImageTest, DamagedStreamsNeverCrash) {
  std::string zlib = compressed("zlib");
  auto info = section_in_file(zlib, ".debug_info");
  ASSERT_TRUE(info);
  // Garbage in the middle of the stream, a size claim far too big, a file cut short.
  std::string garbled = (dir_ / "garbled").string();
  fs::copy_file(zlib, garbled);
  {
    std::fstream f(garbled, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(info->first + info->second / 2));
    std::string junk(64, '\xa5');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  std::string huge = (dir_ / "huge").string();
  fs::copy_file(zlib, huge);
  {
    std::fstream f(huge, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(info->first + 8));  // Elf64_Chdr.ch_size
    std::uint64_t size = std::uint64_t{1} << 62;
    f.write(reinterpret_cast<const char*>(&size), sizeof(size));
  }
  std::string cut = (dir_ / "cut").string();
  fs::copy_file(zlib, cut);
  fs::resize_file(cut, info->first + info->second / 3);
  for (const auto& p : {garbled, huge, cut}) {
    auto img = DebugImage::open(p, inflater_);
    if (img != nullptr) {
      // Whatever libdw makes of it, asking must not crash.
      for (auto a : {Dwarf_Addr{0x1000}, Dwarf_Addr{0x401000}}) (void)answer(img->dwarf(), a);
    }
  }
  EXPECT_EQ(DebugImage::open((dir_ / "missing").string(), inflater_), nullptr);
}

TEST_F(DebugImageTest, FindsTheDebuglinkFileWithTheSameBuildId) {
  fs::create_directories(dir_ / "lib" / ".debug");
  std::string prog = (dir_ / "lib" / "prog").string();
  std::string dbg = (dir_ / "lib" / ".debug" / "prog.debug").string();
  ASSERT_TRUE(run("objcopy --only-keep-debug " + exe_ + " " + dbg));
  ASSERT_TRUE(run("objcopy --strip-debug " + exe_ + " " + prog));
  auto id = build_id_of_file(prog);
  if (!id) GTEST_SKIP() << "the test binary has no build-id";
  // Build-ids under /usr/lib/debug/.build-id are tried first; this one is not installed.
  EXPECT_EQ(find_debug_file(prog, *id, "prog.debug"), dbg);
  EXPECT_EQ(find_debug_file(prog, "00" + id->substr(2), "prog.debug"), std::nullopt);
  EXPECT_EQ(find_debug_file(prog, *id, "../../etc/passwd"), std::nullopt);
  EXPECT_EQ(find_debug_file(prog, *id, nullptr), std::nullopt);
}

}  // namespace
}  // namespace hangscan

namespace hangscan {
namespace {

// DwarfLines must give libdw's answers: the row for an address (also between rows and past a
// sequence's end) and every name of the file table.
void expect_line_tables_like_libdw(Dwarf* dbg) {
  std::size_t cus = 0;
  std::size_t compared = 0;
  Dwarf_Off off = 0;
  Dwarf_Off next = 0;
  std::size_t header = 0;
  while (dwarf_nextcu(dbg, off, &next, &header, nullptr, nullptr, nullptr) == 0 && cus < 40) {
    Dwarf_Die cu;
    Dwarf_Lines* lines = nullptr;
    std::size_t n = 0;
    if (dwarf_offdie(dbg, off + header, &cu) != nullptr &&
        dwarf_getsrclines(&cu, &lines, &n) == 0 && n > 0) {
      auto table = DwarfLines::parse(dbg, &cu);
      ASSERT_TRUE(table) << dwarf_diename(&cu);  // gcc 12 writes DWARF 5
      ++cus;
      Dwarf_Files* files = nullptr;
      std::size_t nfiles = 0;
      ASSERT_EQ(dwarf_getsrcfiles(&cu, &files, &nfiles), 0);
      for (std::size_t i = 0; i < nfiles; ++i) {
        const char* want = dwarf_filesrc(files, i, nullptr, nullptr);
        const std::string* got = table->file(i);
        ASSERT_EQ(got != nullptr, want != nullptr) << i;
        if (want != nullptr) {
          EXPECT_EQ(*got, want) << i;
        }
      }
      std::size_t step = std::max<std::size_t>(1, n / 25);
      for (std::size_t i = 0; i < n; i += step) {
        Dwarf_Addr row = 0;
        dwarf_lineaddr(dwarf_onesrcline(lines, i), &row);
        for (Dwarf_Addr a : {row, row + 1, row + 3, row - 1}) {
          Dwarf_Line* l = dwarf_getsrc_die(&cu, a);
          const char* want_file = l != nullptr ? dwarf_linesrc(l, nullptr, nullptr) : nullptr;
          int want_line = 0;
          if (l != nullptr) dwarf_lineno(l, &want_line);
          auto got = table->lookup(a);
          ASSERT_EQ(got.has_value(), want_file != nullptr) << std::hex << a;
          if (got) {
            EXPECT_EQ(got->file, want_file) << std::hex << a;
            EXPECT_EQ(got->line, want_line) << std::hex << a;
          }
          ++compared;
        }
      }
    }
    off = next;
  }
  EXPECT_GT(cus, 0u);
  EXPECT_GT(compared, 100u);
}

TEST_F(DebugImageTest, LineTableAnswersLikeLibdw) {
  int fd = ::open(exe_.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Dwarf* dbg = dwarf_begin(fd, DWARF_C_READ);
  ASSERT_NE(dbg, nullptr);
  expect_line_tables_like_libdw(dbg);
  dwarf_end(dbg);
  ::close(fd);
}

// The same on the distribution's own debug info (Debian: compressed, DWARF 5; python3.11's
// is LTO-built), when its debug package is installed.
TEST_F(DebugImageTest, LineTableAnswersLikeLibdwOnInstalledDebugInfo) {
  std::size_t checked = 0;
  for (const char* lib : {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11"}) {
    auto id = build_id_of_file(lib);
    auto dbg_file = id ? find_debug_file(lib, *id, nullptr) : std::nullopt;
    if (!dbg_file) continue;
    auto img = DebugImage::open(*dbg_file, inflater_);
    ASSERT_NE(img, nullptr) << *dbg_file;
    expect_line_tables_like_libdw(img->dwarf());
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no debug package (libc6-dbg, python3.11-dbg) installed";
}

}  // namespace
}  // namespace hangscan
