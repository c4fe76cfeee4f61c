// write_elf_core() round trip: the core written from fabricated memory parses back with
// CoreFile (threads, registers, files, auxv, memory, holes, the HANGSCAN note).
#include <gtest/gtest.h>

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "corewrite/elf_core_writer.h"
#include "target/core_file.h"

namespace hangscan {
namespace {

class TempFile {
 public:
  TempFile() {
    char tmpl[] = "/tmp/hs-corewrite-XXXXXX";
    fd_ = mkstemp(tmpl);
    path_ = tmpl;
  }
  ~TempFile() {
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

TEST(ElfCoreWriter, RoundTripThroughCoreFile) {
  BufferMemory mem;
  std::vector<std::uint8_t> stack(0x2000, 0);
  for (std::size_t i = 0x1000; i < 0x2000; ++i) stack[i] = static_cast<std::uint8_t>(i);
  mem.add(0x10000, stack);  // first page zero: a hole
  mem.add(0x20000, std::vector<std::uint8_t>(0x1000, 0x5a));
  // 0x30000..0x31000 is planned but unreadable.

  CoreProcessInfo info;
  info.pid = 100;
  info.ppid = 1;
  info.comm = "py";
  info.psargs = "python3 x.py";
  std::uint64_t auxv[] = {AT_PAGESZ, 4096, AT_NULL, 0};
  info.auxv.assign(reinterpret_cast<std::uint8_t*>(auxv),
                   reinterpret_cast<std::uint8_t*>(auxv) + sizeof(auxv));
  info.mappings = {Mapping{0x20000, 0x21000, 0x3000, "rw-p", "/usr/lib/libx.so"}};
  for (int tid : {100, 101}) {
    CoreThreadState t;
    t.tid = tid;
    t.regs.raw.rip = 0x1234 + static_cast<unsigned>(tid);
    t.regs.raw.rsp = 0x11000;
    t.fpregs = user_fpregs_struct{};
    info.threads.push_back(t);
  }
  CorePlan plan;
  plan.pieces = {
      CorePiece{0x10000, 0x12000, 0x2000, "rw-p", KeepReason::stack, true, {}},
      CorePiece{0x20000, 0x21000, 0x1000, "rw-p", KeepReason::module_data, true, {}},
      CorePiece{0x30000, 0x31000, 0x1000, "rw-p", KeepReason::other, false, {}},
      CorePiece{0x40000, 0x80000, 0, "rw-p", KeepReason::none, false, "over --max-size 1M"}};
  TempFile f;
  auto stats = write_elf_core(f.fd(), info, plan, mem);
  ASSERT_TRUE(stats) << stats.error().what();
  EXPECT_EQ(stats->data_bytes, 0x2000u);
  EXPECT_EQ(stats->zero_bytes, 0x1000u);
  ASSERT_EQ(stats->omitted.size(), 2u);
  EXPECT_EQ(stats->omitted[0], "omitted 40000-80000 262144 over --max-size 1M");
  EXPECT_EQ(stats->omitted[1], "omitted 30000-31000 4096 unreadable");

  struct stat st {};
  ASSERT_EQ(fstat(f.fd(), &st), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), stats->file_size);

  auto core = CoreFile::open(f.path());
  ASSERT_TRUE(core) << core.error().what();
  ASSERT_EQ((*core)->threads().size(), 2u);
  EXPECT_EQ((*core)->threads()[0].tid, 100);
  EXPECT_EQ((*core)->threads()[1].regs.raw.rip, 0x1234u + 101);
  ASSERT_TRUE((*core)->psinfo());
  EXPECT_EQ((*core)->psinfo()->fname, "py");
  EXPECT_EQ((*core)->psinfo()->psargs, "python3 x.py");
  ASSERT_EQ((*core)->files().size(), 1u);
  EXPECT_EQ((*core)->files()[0].path, "/usr/lib/libx.so");
  EXPECT_EQ((*core)->files()[0].file_offset, 0x3000u);
  EXPECT_EQ((*core)->auxv_value(AT_PAGESZ), 4096u);
  ASSERT_EQ((*core)->segments().size(), 4u);
  EXPECT_EQ((*core)->segments()[3].filesz, 0u);
  EXPECT_EQ((*core)->segments()[3].memsz, 0x40000u);
  for (const auto& s : (*core)->segments()) EXPECT_EQ(s.offset % 4096, 0u);
  std::uint8_t b[4] = {};
  ASSERT_EQ((*core)->read(0x10ffe, b, 4), 4u);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[2], 0x00);  // 0x1000 & 0xff
  EXPECT_EQ(b[3], 0x01);
  ASSERT_EQ((*core)->read(0x20010, b, 1), 1u);
  EXPECT_EQ(b[0], 0x5a);
  ASSERT_EQ((*core)->omitted().size(), 2u);
  EXPECT_EQ((*core)->omitted()[0], "40000-80000 262144 over --max-size 1M");
  EXPECT_TRUE((*core)->warnings().empty());
}

}  // namespace
}  // namespace hangscan
