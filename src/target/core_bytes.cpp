#include "target/core_bytes.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "util/huge_mapping.h"

namespace hangscan {
namespace {

class BufferBytes : public CoreBytes {
 public:
  explicit BufferBytes(std::vector<std::uint8_t> b) : bytes_(std::move(b)) {}
  std::size_t size() const override { return bytes_.size(); }
  std::size_t read_at(std::uint64_t offset, void* buf, std::size_t len) const override {
    if (offset >= bytes_.size()) return 0;
    auto n = static_cast<std::size_t>(std::min<std::uint64_t>(len, bytes_.size() - offset));
    std::memcpy(buf, bytes_.data() + offset, n);
    return n;
  }

 private:
  std::vector<std::uint8_t> bytes_;
};

// A core file read with pread through a cache of aligned blocks: the small reads of one
// capture (Python objects, stack words, ELF headers of the modules) cluster, and a block is
// read once. Reads of a block or more bypass the cache. Blocks live in 2 MiB huge-page
// chunks: one fault per 512 blocks instead of one per block.
class FileBytes : public CoreBytes {
 public:
  FileBytes(int fd, std::size_t size) : fd_(fd), size_(size) {}
  ~FileBytes() override { ::close(fd_); }
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  std::size_t size() const override { return size_; }

  std::size_t read_at(std::uint64_t offset, void* buf, std::size_t len) const override {
    if (offset >= size_) return 0;
    len = static_cast<std::size_t>(std::min<std::uint64_t>(len, size_ - offset));
    auto* out = static_cast<std::uint8_t*>(buf);
    if (len >= kBlock) return pread_all(offset, out, len);
    std::lock_guard<std::mutex> lock(mu_);
    std::size_t done = 0;
    while (done < len) {
      std::uint64_t at = offset + done;
      const Block* b = block(at / kBlock);
      if (b == nullptr) return done + pread_all(at, out + done, len - done);
      std::size_t rel = static_cast<std::size_t>(at % kBlock);
      if (rel >= b->size) break;
      std::size_t n = std::min(len - done, b->size - rel);
      std::memcpy(out + done, b->data + rel, n);
      done += n;
    }
    return done;
  }

 private:
  static constexpr std::size_t kBlock = 4 * 1024;
  static constexpr std::size_t kChunk = HugeMapping::kHugePage;
  static constexpr std::size_t kMaxChunks = 32;  // 64 MiB; then reads go straight to the file
  struct Block {
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;
  };

  std::size_t pread_all(std::uint64_t offset, std::uint8_t* out, std::size_t len) const {
    std::size_t done = 0;
    while (done < len) {
      ssize_t got = pread(fd_, out + done, len - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      done += static_cast<std::size_t>(got);
    }
    return done;
  }

  // Room for one more block; nullptr once the cache is full or memory is short.
  std::uint8_t* slot() const {
    if (chunks_.empty() || used_ == kChunk) {
      if (chunks_.size() >= kMaxChunks) return nullptr;
      HugeMapping chunk(kChunk);
      if (!chunk) return nullptr;
      chunks_.push_back(std::move(chunk));
      used_ = 0;
    }
    std::uint8_t* p = chunks_.back().data() + used_;
    used_ += kBlock;
    return p;
  }

  // The block at `index`, read on first use; nullptr once the cache is full.
  const Block* block(std::uint64_t index) const {
    if (auto it = blocks_.find(index); it != blocks_.end()) return &it->second;
    std::uint8_t* p = slot();
    if (p == nullptr) return nullptr;
    Block b{p, pread_all(index * kBlock, p, kBlock)};
    return &blocks_.emplace(index, b).first->second;
  }

  int fd_;
  std::size_t size_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::uint64_t, Block> blocks_;
  mutable std::vector<HugeMapping> chunks_;
  mutable std::size_t used_ = 0;
};

}  // namespace

std::unique_ptr<CoreBytes> make_file_bytes(int fd, std::size_t size) {
  return std::make_unique<FileBytes>(fd, size);
}

std::unique_ptr<CoreBytes> make_buffer_bytes(std::vector<std::uint8_t> bytes) {
  return std::make_unique<BufferBytes>(std::move(bytes));
}

}  // namespace hangscan
