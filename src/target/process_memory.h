// ProcessMemory: a MemoryReader over a live process.
//
// Why: reading with process_vm_readv needs no stop and no attach, so the same reader serves
// the stack copy during a freeze and the code-object decoding after it. /proc/PID/mem is the
// fallback where process_vm_readv is refused (some seccomp/container set-ups).
#pragma once

#include "target/memory_reader.h"

namespace hangscan {

class ProcessMemory : public MemoryReader {
 public:
  explicit ProcessMemory(int pid);
  ~ProcessMemory() override;
  ProcessMemory(const ProcessMemory&) = delete;
  ProcessMemory& operator=(const ProcessMemory&) = delete;

  std::size_t read(std::uint64_t addr, void* buf, std::size_t len) override;
  // process_vm_readv with up to IOV_MAX reads per call.
  void read_many(std::span<ReadOp> ops) override;

 private:
  std::size_t read_proc_mem(std::uint64_t addr, void* buf, std::size_t len);
  int pid_;
  int mem_fd_ = -1;
  bool vm_readv_works_ = true;
};

}  // namespace hangscan
