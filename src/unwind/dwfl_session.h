// DwflSession: one target's address space as libdw sees it, and the symbolizer over it.
//
// Why: libdw needs the target's modules reported once (from the ModuleSource's mapping list,
// so live processes, cores and sampled stacks are described the same way, with sysroot
// remapping for cores); both the libdw unwinder (CFI) and symbolization (names, file:line,
// inline scopes, build-ids) use that one Dwfl. Symbolized frames go through the run-wide
// SymbolCache.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hangscan/model.h"
#include "hangscan/result.h"
#include "target/module_source.h"
#include "unwind/symbol_cache.h"
#include "unwind/unwinder.h"

namespace hangscan {

class DwflSession {
 public:
  static Result<std::unique_ptr<DwflSession>> create(ModuleSource& source);
  ~DwflSession();
  DwflSession(const DwflSession&) = delete;
  DwflSession& operator=(const DwflSession&) = delete;

  Dwfl* dwfl() { return dwfl_; }
  ModuleSource& source() { return source_; }

  // Frames for one raw frame: inline frames (innermost first) then the native frame.
  std::vector<Frame> symbolize(const RawFrame& raw, SymbolCache& cache);
  // Call before symbolizing a capture's stacks, with every frame that will be symbolized:
  // the DWARF of all their modules starts opening at once, on other threads (see
  // OfflineModules::prefetch; libc's and python's inflate side by side), and each module's
  // ELF symbols are looked up in one pass for all its addresses (find_symbols) instead of
  // one pass per address. Frames already in the cache cost nothing.
  void prepare(const std::vector<const RawFrame*>& frames, SymbolCache& cache);

  // Problems met while opening modules (missing files, build-id mismatches).
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct ModuleData {
    std::string local_path;
    std::vector<std::uint8_t> image;      // in-memory ELF ([vdso])
    std::optional<std::string> build_id;  // hex, once its ELF was found ("" when it has none)
  };
  // The module's build-id in hex ("" when none), formatted once per module (every frame asks).
  static const std::string& build_id_of(Dwfl_Module* mod, ModuleData* data, std::string& scratch);
  static ModuleData* data_of(Dwfl_Module* mod);

  explicit DwflSession(ModuleSource& source);
  Status report_modules();
  Frame unknown_frame(const RawFrame& raw) const;
  // The module's cache key (build-id, else path) and the file on this machine, if any.
  bool offline_module(Dwfl_Module* mod, std::string& key, std::string& path) const;
  static int find_elf(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                      char** file_name, Elf** elfp);

  ModuleSource& source_;
  Dwfl* dwfl_ = nullptr;
  Dwfl_Callbacks callbacks_{};
  char* debuginfo_path_ = nullptr;
  std::vector<std::unique_ptr<ModuleData>> modules_;
  std::vector<std::string> notes_;
};

}  // namespace hangscan
