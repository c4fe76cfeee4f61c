// CoreBytes: where the bytes of a core live, and its two kinds (a file read with pread
// through a block cache, a buffer).
//
// Why its own file: how a core's bytes are fetched (and cached) is apart from what they mean
// (core_file.cpp parses them), and both kinds are chosen by CoreFile::open/parse_buffer only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace hangscan {

// Where the bytes of a core live: a file (or the decompressed copy of one) read with pread,
// or a buffer (tests, fuzzing). Why pread and not mmap: in a VM a fault on a file mapping
// costs ~25 us (fault-around maps 16 pages, each accounted), ten times a 4 KiB pread; a core
// is read in ~1,000 scattered small pieces, and the 32 cores of a job paid for it 32 times.
class CoreBytes {
 public:
  virtual ~CoreBytes() = default;
  virtual std::size_t size() const = 0;
  // Copies up to `len` bytes at `offset`; returns the bytes copied (short at the end of the
  // data or on an I/O error).
  virtual std::size_t read_at(std::uint64_t offset, void* buf, std::size_t len) const = 0;
};

// The core file open on `fd` (taken over), `size` bytes.
std::unique_ptr<CoreBytes> make_file_bytes(int fd, std::size_t size);
// Bytes already in memory (tests, fuzzing).
std::unique_ptr<CoreBytes> make_buffer_bytes(std::vector<std::uint8_t> bytes);

}  // namespace hangscan
