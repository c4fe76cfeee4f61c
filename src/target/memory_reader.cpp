#include "target/memory_reader.h"

#include <algorithm>

namespace hangscan {

std::optional<std::string> MemoryReader::read_cstring(std::uint64_t addr, std::size_t max_len) {
  std::string out;
  char chunk[256];
  while (out.size() < max_len) {
    std::size_t want = std::min(sizeof(chunk), max_len - out.size());
    // Do not cross a page boundary in one read: the next page may be unmapped.
    std::size_t to_page = 4096 - (addr % 4096);
    want = std::min(want, to_page);
    std::size_t got = read(addr, chunk, want);
    if (got == 0) {
      if (out.empty()) return std::nullopt;
      return out;
    }
    const char* nul = static_cast<const char*>(std::memchr(chunk, 0, got));
    if (nul != nullptr) {
      out.append(chunk, static_cast<std::size_t>(nul - chunk));
      return out;
    }
    out.append(chunk, got);
    addr += got;
  }
  return out;
}

void MemoryReader::read_many(std::span<ReadOp> ops) {
  for (auto& op : ops) op.got = read(op.addr, op.buf, op.len);
}

void BufferMemory::add(std::uint64_t addr, std::vector<std::uint8_t> bytes) {
  regions_.push_back(Region{addr, std::move(bytes)});
}

std::size_t BufferMemory::read(std::uint64_t addr, void* buf, std::size_t len) {
  auto* out = static_cast<std::uint8_t*>(buf);
  std::size_t done = 0;
  while (done < len) {
    std::uint64_t a = addr + done;
    const Region* hit = nullptr;
    for (const auto& r : regions_) {
      if (a >= r.addr && a < r.addr + r.bytes.size()) {
        hit = &r;
        break;
      }
    }
    if (hit == nullptr) break;
    std::size_t off = static_cast<std::size_t>(a - hit->addr);
    std::size_t n = std::min(len - done, hit->bytes.size() - off);
    std::memcpy(out + done, hit->bytes.data() + off, n);
    done += n;
  }
  return done;
}

}  // namespace hangscan
