// MemoryReader: read-only access to a target's address space.
//
// Why: the unwinder, the Python walker and the environment reader must not know whether
// memory comes from a live process (process_vm_readv), a core file (PT_LOAD segments plus the
// mapped files on disk) or a test's fabricated buffer. Reads never write and never fail
// loudly: they return how many bytes were read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hangscan {

// The x86-64 base page: the unit of reads that fail, of holes in cores, of pagemap entries.
inline constexpr std::uint64_t kPageSize = 4096;

class MemoryReader {
 public:
  virtual ~MemoryReader() = default;

  // Copies up to `len` bytes at `addr` into `buf`; returns the number of bytes copied, which is
  // short (possibly 0) where memory is unmapped or unreadable.
  virtual std::size_t read(std::uint64_t addr, void* buf, std::size_t len) = 0;

  bool read_exact(std::uint64_t addr, void* buf, std::size_t len) {
    return len == 0 || read(addr, buf, len) == len;
  }

  template <class T>
  bool read_obj(std::uint64_t addr, T& out) {
    return read_exact(addr, &out, sizeof(T));
  }

  std::optional<std::uint64_t> read_u64(std::uint64_t addr) {
    std::uint64_t v = 0;
    if (!read_obj(addr, v)) return std::nullopt;
    return v;
  }

  // A NUL-terminated string of at most `max_len` bytes; nullopt if the first byte is unreadable.
  std::optional<std::string> read_cstring(std::uint64_t addr, std::size_t max_len = 4096);

  // One read of a batch: `got` is set to what read() would have returned.
  struct ReadOp {
    std::uint64_t addr = 0;
    std::uint8_t* buf = nullptr;
    std::size_t len = 0;
    std::size_t got = 0;
  };
  // Many reads at once. Why: for a live process every read is a system call, and a freeze
  // copies every thread's stack and many pages; one call for all of them shortens the pause.
  // The default reads them one by one.
  virtual void read_many(std::span<ReadOp> ops);
};

// A MemoryReader over buffers held in this process: for tests that fabricate a target's memory,
// and for serving copied stacks to the unwinder.
class BufferMemory : public MemoryReader {
 public:
  void add(std::uint64_t addr, std::vector<std::uint8_t> bytes);
  std::size_t read(std::uint64_t addr, void* buf, std::size_t len) override;

 private:
  struct Region {
    std::uint64_t addr;
    std::vector<std::uint8_t> bytes;
  };
  std::vector<Region> regions_;
};

}  // namespace hangscan
