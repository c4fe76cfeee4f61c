// Writes the seed cores of the core reader's fuzz corpus into a directory.
//
// Why generated: small fabricated cores (tests/unit/target/core_builder.h) cover every note
// kind, a file mapping whose pages were not dumped, and an initial stack with its auxiliary
// vector, in a few KiB each; real cores are hundreds of KiB and differ per machine. The
// corpus runner then feeds each truncated at many points and with bytes flipped.
#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

#include "../unit/target/core_builder.h"

namespace {

using hangscan::testing::FakeCore;
using hangscan::testing::make_regs;

FakeCore full_core() {
  FakeCore c;
  constexpr std::uint64_t lo = 0x7ffd00000000, hi = lo + 0x1000;
  std::vector<std::uint8_t> stack(hi - lo, 0);
  // argc=1, argv[0], NULL, envp[0], NULL, auxv {AT_EXECFN, AT_PAGESZ}, AT_NULL; strings on top.
  const char* strs[] = {"prog", "RANK=1", "/usr/bin/prog"};
  std::uint64_t at = hi - 64, ptr[3];
  for (int i = 0; i < 3; ++i) {
    std::string s = strs[i];
    hangscan::testing::put_bytes(stack, at - lo, s.c_str(), s.size() + 1);
    ptr[i] = at;
    at += s.size() + 1;
  }
  std::uint64_t words[] = {1, ptr[0], 0, ptr[1], 0, AT_EXECFN, ptr[2], AT_PAGESZ, 4096, AT_NULL, 0};
  std::uint64_t sp = hi - 512;
  for (std::size_t i = 0; i < sizeof(words) / 8; ++i)
    hangscan::testing::put(stack, sp - lo + i * 8, words[i]);
  c.add_note(NT_PRPSINFO, FakeCore::prpsinfo(10, 1, "prog", "prog"));
  c.add_note(NT_PRSTATUS, FakeCore::prstatus(11, SIGSEGV, make_regs(0x401000, sp, ~0ULL)));
  c.add_note(NT_PRSTATUS, FakeCore::prstatus(10, SIGSEGV, make_regs(0x401008, sp - 64, 202)));
  c.add_note(0x53494749, FakeCore::siginfo(SIGSEGV, 1, 0));
  c.add_note(0x46494c45, FakeCore::file_note({{0x400000, 0x402000, 0, "/usr/bin/prog"},
                                              {0x7f0000000000, 0x7f0000002000, 0,
                                               "/usr/lib/x86_64-linux-gnu/libc.so.6"}}));
  c.add_note(NT_AUXV, FakeCore::auxv({{AT_EXECFN, ptr[2]}, {AT_PAGESZ, 4096}}));
  std::vector<std::uint8_t> elf(64, 0);
  elf[0] = 0x7f;
  elf[1] = 'E';
  elf[2] = 'L';
  elf[3] = 'F';
  elf[4] = 2;
  elf[5] = 1;
  c.segments.push_back({0x400000, 0x2000, elf, PF_R});
  c.segments.push_back({0x7f0000000000, 0x2000, {}, PF_R | PF_X});
  c.segments.push_back({lo, hi - lo, stack, PF_R | PF_W});
  return c;
}

void write(const std::string& dir, const std::string& name, const std::vector<std::uint8_t>& b) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 64;
  }
  std::string dir = argv[1];
  ::mkdir(dir.c_str(), 0755);
  FakeCore full = full_core();
  write(dir, "full.core", full.build());
  FakeCore gcore = full;
  for (auto& n : gcore.notes) {
    if (n.type == NT_PRSTATUS) hangscan::testing::put<std::int16_t>(n.desc, 12, 0);
  }
  write(dir, "gcore.core", gcore.build());
  // An executable whose name is no Python version (python3.99999999999 once ended the run).
  FakeCore odd_python = full;
  for (auto& n : odd_python.notes) {
    if (n.type == 0x46494c45) {
      n.desc = FakeCore::file_note(
          {{0x400000, 0x402000, 0, "/usr/bin/python3.99999999999"},
           {0x7f0000000000, 0x7f0000002000, 0, "/usr/lib/libpython3.99999999999.so"}});
    }
  }
  write(dir, "odd_python.core", odd_python.build());
  FakeCore minimal;
  minimal.add_note(NT_PRSTATUS, FakeCore::prstatus(1, 0, make_regs(0, 0, ~0ULL)));
  write(dir, "minimal.core", minimal.build());
  std::printf("core seeds written to %s\n", dir.c_str());
  return 0;
}
