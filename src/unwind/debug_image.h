// DebugImage: the DWARF of one module file, ready for libdw, paying only for what
// symbolizing needs.
//
// Why: distributions ship debug info compressed (Debian: zlib, SHF_COMPRESSED), and libdw's
// dwarf_begin_elf() inflates every .debug_* section it knows at open, location lists and
// macros included, with zlib. For a torch process (libc and python3.11 debug files, 32 MB
// inflated) that was three quarters of `hangscan core`'s time. This keeps only the sections
// that names, file:line and inline frames read (info, abbrev, line, str, line_str, aranges,
// ranges/rnglists, addr, str_offsets), inflates them with libdeflate when it is installed
// (3x zlib's speed; zlib through libelf otherwise) and hands libdw an in-memory ELF image of
// just those. Opened once per build-id for a whole run (OfflineModules).
#pragma once

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "util/huge_mapping.h"

namespace hangscan {

// Inflates zlib streams; libdeflate (dlopen'ed, optional) or none. One per run.
class Inflater {
 public:
  // `use_libdeflate` false: libelf's zlib only (tests of that path).
  explicit Inflater(bool use_libdeflate = true);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // False when libdeflate is not installed: callers fall back to libelf's zlib.
  bool available() const { return alloc_ != nullptr; }
  // Inflates exactly `out_size` bytes; false on any error or size mismatch. Thread-safe.
  bool inflate(const void* in, std::size_t in_size, void* out, std::size_t out_size) const;

 private:
  using AllocFn = void* (*)();
  using FreeFn = void (*)(void*);
  using ZlibFn = int (*)(void*, const void*, std::size_t, void*, std::size_t, std::size_t*);
  void* lib_ = nullptr;
  AllocFn alloc_ = nullptr;
  FreeFn free_ = nullptr;
  ZlibFn zlib_decompress_ = nullptr;
};

// The separate debug file of a module file: /usr/lib/debug/.build-id/xx/yyyy.debug by
// `build_id` (hex), else the .gnu_debuglink name beside the file, in its .debug/ and under
// /usr/lib/debug/<dir>/ (a candidate whose build-id differs is skipped).
std::optional<std::string> find_debug_file(const std::string& module_path,
                                           const std::string& build_id, const char* debuglink);

// A Dwfl find_debuginfo callback doing the above: like dwfl_standard_find_debuginfo, but it
// never asks debuginfod (which dlopens libcurl and its dependencies, ~15 ms, for every
// module without local debug info, and may go to the network).
int find_debuginfo_local(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                         const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                         char** debuginfo_file_name);

// Where the DWARF of an offline module lies: its own file when that has .debug_info, else
// its separate debug file; nullopt when there is none.
std::optional<std::string> dwarf_file_of(Dwfl_Module* mod);

class DebugImage {
 public:
  // The DWARF of the ELF file at `path` (a separate debug file or the module itself);
  // nullptr when it has none or cannot be read; std::bad_alloc when memory ran out. A libdw
  // call on dwarf() that runs out of memory throws std::bad_alloc too (libdw's default is to
  // exit the process); the image is then inconsistent and must not be used again.
  static std::unique_ptr<DebugImage> open(const std::string& path, const Inflater& inflater);
  ~DebugImage();
  DebugImage(const DebugImage&) = delete;
  DebugImage& operator=(const DebugImage&) = delete;

  Dwarf* dwarf() const { return dwarf_; }
  // Bytes inflated for this image (0 when libdw reads the file as it is).
  std::size_t inflated_bytes() const { return inflated_; }

 private:
  DebugImage() = default;
  static std::unique_ptr<DebugImage> open_image(const std::string& path, const Inflater& inflater);
  int fd_ = -1;
  void* source_ = nullptr;  // the ELF handle of the file (Elf*)
  HugeMapping memory_;      // holds image_
  std::uint8_t* image_ = nullptr;
  std::size_t image_size_ = 0;
  void* image_elf_ = nullptr;  // Elf* over image_
  Dwarf* dwarf_ = nullptr;
  std::size_t inflated_ = 0;
};

}  // namespace hangscan
