// KernelSymbols: kernel addresses to function names, from /proc/kallsyms.
//
// Why: the recorder's kernel stacks (where a thread was switched out, where a sample
// interrupted a system call) are raw addresses; the report names them ("futex_wait_queue",
// "pipe_read"). /proc/kallsyms shows real addresses to root only; otherwise every address reads
// 0 and names are left out rather than guessed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hangscan {

class KernelSymbols {
 public:
  // Reads /proc/kallsyms (or `path`) once.
  explicit KernelSymbols(const std::string& path = "/proc/kallsyms");
  // "pipe_read+0x1a", or "0xffffffff81234567" when unknown.
  std::string name(std::uint64_t addr) const;
  bool available() const { return !syms_.empty(); }

 private:
  struct Sym {
    std::uint64_t addr;
    std::string name;
  };
  std::vector<Sym> syms_;  // sorted by address
};

}  // namespace hangscan
