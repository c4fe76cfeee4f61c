#include "corewrite/read_recorder.h"

namespace hangscan {

std::size_t RecordingMemory::read(std::uint64_t addr, void* buf, std::size_t len) {
  std::size_t got = inner_.read(addr, buf, len);
  // Record what was asked for, even when short: a reader that failed here will fail the
  // same way on the core only if that memory is absent there too.
  if (len > 0 && addr + len > addr) {
    if (!ranges_.empty() && ranges_.back().first <= addr && addr + len <= ranges_.back().second) {
      return got;  // the walker reads one object in several small pieces
    }
    ranges_.emplace_back(addr, addr + len);
  }
  return got;
}

}  // namespace hangscan
