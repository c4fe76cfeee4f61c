#include "target/core_decompress.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/core.h>

#ifdef HANGSCAN_HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef HANGSCAN_HAVE_LZ4
#include <lz4frame.h>
#endif

#include "target/memory_reader.h"

namespace hangscan {
namespace {

constexpr std::size_t kChunk = 1 << 20;

enum class Format { none, zstd, lz4, xz, gzip };

Format sniff(const std::uint8_t* m, std::size_t n) {
  if (n >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) return Format::zstd;
  if (n >= 4 && m[0] == 0x04 && m[1] == 0x22 && m[2] == 0x4d && m[3] == 0x18) return Format::lz4;
  if (n >= 6 && std::memcmp(m,
                            "\xfd"
                            "7zXZ\0",
                            6) == 0)
    return Format::xz;
  if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b) return Format::gzip;
  return Format::none;
}

// An unlinked temporary file that writes sparsely: whole zero pages become holes, which keeps
// the mostly-empty address space of a core from filling the disk.
class SparseTemp {
 public:
  ~SparseTemp() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status create() {
    const char* dir = std::getenv("TMPDIR");
    std::string d = dir != nullptr && *dir != '\0' ? dir : "/tmp";
    fd_ = ::open(d.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      std::string tmpl = d + "/hangscan-core-XXXXXX";
      fd_ = mkostemp(tmpl.data(), O_CLOEXEC);
      if (fd_ < 0) {
        return Error(
            Errc::io,
            fmt::format("cannot create a temporary file in {}: {}", d, std::strerror(errno)), errno,
            "set TMPDIR to a writable directory with room for the core");
      }
      ::unlink(tmpl.c_str());
    }
    return Ok{};
  }
  Status write(const std::uint8_t* p, std::size_t n) {
    while (n > 0) {
      std::size_t in_page = kPageSize - static_cast<std::size_t>(size_ % kPageSize);
      std::size_t k = std::min(n, in_page);
      bool zero = k == kPageSize && is_zero(p, k);
      if (!zero) {
        ssize_t w = pwrite(fd_, p, k, static_cast<off_t>(size_));
        if (w != static_cast<ssize_t>(k)) {
          return Error(Errc::io,
                       fmt::format("cannot write the decompressed core: {}",
                                   w < 0 ? std::strerror(errno) : "short write"),
                       errno, "set TMPDIR to a directory with room for the unpacked core");
        }
      }
      size_ += k;
      p += k;
      n -= k;
    }
    return Ok{};
  }
  Result<int> finish() {
    if (ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
      return Error(Errc::io,
                   fmt::format("cannot size the decompressed core: {}", std::strerror(errno)),
                   errno);
    }
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  static bool is_zero(const std::uint8_t* p, std::size_t n) {
    return p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0;
  }
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

Error corrupt(const std::string& path, const char* fmt_name, const std::string& why) {
  return Error(Errc::bad_data, fmt::format("{}: corrupt {} stream: {}", path, fmt_name, why), 0,
               "the compressed core is damaged or cut short; take it again");
}

// Feeds the file to `step` one chunk at a time. `step` returns the decoder's hint of input
// still expected (0 exactly at the end of a frame), so a stream cut short is detected.
template <class Step>
Status pump(int in, const std::string& path, const char* format, Step step) {
  std::vector<std::uint8_t> ibuf(kChunk);
  std::size_t last = 1;
  for (;;) {
    ssize_t got = ::read(in, ibuf.data(), ibuf.size());
    if (got < 0) {
      return Error(Errc::io, fmt::format("{}: read error: {}", path, std::strerror(errno)), errno);
    }
    if (got == 0) return last != 0 ? Status(corrupt(path, format, "ends inside a frame")) : Ok{};
    Result<std::size_t> r = step(ibuf.data(), static_cast<std::size_t>(got));
    if (!r) return std::move(r).error();
    last = r.value();
  }
}

#ifdef HANGSCAN_HAVE_ZSTD
Status unpack_zstd(int in, SparseTemp& out, const std::string& path) {
  ZSTD_DStream* ds = ZSTD_createDStream();
  if (ds == nullptr) return Error(Errc::internal, "zstd: out of memory");
  std::vector<std::uint8_t> obuf(ZSTD_DStreamOutSize());
  Status st =
      pump(in, path, "zstd", [&](const std::uint8_t* data, std::size_t n) -> Result<std::size_t> {
        ZSTD_inBuffer ib{data, n, 0};
        std::size_t last = 1;
        while (ib.pos < ib.size) {
          ZSTD_outBuffer ob{obuf.data(), obuf.size(), 0};
          last = ZSTD_decompressStream(ds, &ob, &ib);
          if (ZSTD_isError(last)) return corrupt(path, "zstd", ZSTD_getErrorName(last));
          Status w = out.write(obuf.data(), ob.pos);
          if (!w) return std::move(w).error();
        }
        return last;
      });
  ZSTD_freeDStream(ds);
  return st;
}
#endif

#ifdef HANGSCAN_HAVE_LZ4
Status unpack_lz4(int in, SparseTemp& out, const std::string& path) {
  LZ4F_dctx* dctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION))) {
    return Error(Errc::internal, "lz4: out of memory");
  }
  std::vector<std::uint8_t> obuf(4 * kChunk);
  Status st =
      pump(in, path, "lz4", [&](const std::uint8_t* data, std::size_t n) -> Result<std::size_t> {
        std::size_t pos = 0;
        std::size_t last = 1;
        while (pos < n) {
          std::size_t in_sz = n - pos;
          std::size_t out_sz = obuf.size();
          last = LZ4F_decompress(dctx, obuf.data(), &out_sz, data + pos, &in_sz, nullptr);
          if (LZ4F_isError(last)) return corrupt(path, "lz4", LZ4F_getErrorName(last));
          pos += in_sz;
          Status w = out.write(obuf.data(), out_sz);
          if (!w) return std::move(w).error();
          if (in_sz == 0 && out_sz == 0) break;  // no progress possible: do not spin
        }
        return last;
      });
  LZ4F_freeDecompressionContext(dctx);
  return st;
}
#endif

}  // namespace

Result<int> decompress_if_needed(int fd, const std::string& path) {
  std::uint8_t magic[8] = {};
  ssize_t got = pread(fd, magic, sizeof(magic), 0);
  Format f = sniff(magic, got > 0 ? static_cast<std::size_t>(got) : 0);
  if (f == Format::none) return -1;
  if (f == Format::xz || f == Format::gzip) {
    const char* tool = f == Format::xz ? "xz -dk" : "gzip -dk";
    return Error(Errc::unsupported,
                 fmt::format("{}: {}-compressed core", path, f == Format::xz ? "xz" : "gzip"), 0,
                 fmt::format("unpack it first: {} {}", tool, path));
  }
  SparseTemp out;
  Status st = out.create();
  if (!st) return std::move(st).error();
  if (f == Format::zstd) {
#ifdef HANGSCAN_HAVE_ZSTD
    st = unpack_zstd(fd, out, path);
#else
    return Error(Errc::unsupported, fmt::format("{}: zstd-compressed core", path), 0,
                 fmt::format("hangscan was built without libzstd; unpack it: zstd -dk {}", path));
#endif
  } else {
#ifdef HANGSCAN_HAVE_LZ4
    st = unpack_lz4(fd, out, path);
#else
    return Error(Errc::unsupported, fmt::format("{}: lz4-compressed core", path), 0,
                 fmt::format("hangscan was built without liblz4; unpack it: lz4 -dk {}", path));
#endif
  }
  if (!st) return std::move(st).error();
  return out.finish();
}

}  // namespace hangscan
