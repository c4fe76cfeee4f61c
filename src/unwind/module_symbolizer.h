// Symbolizing one address inside one ELF module: function, file:line, inline frames.
//
// Why its own file: the same DWARF walk serves a target's own Dwfl (in-memory modules such as
// [vdso]) and the run-wide OfflineModules, which open each distinct binary once (keyed by
// build-id) so that many ranks or cores of one program pay for its DWARF only once.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hangscan/model.h"
#include "unwind/debug_image.h"
#include "unwind/dwarf_lines.h"
#include "unwind/symbol_ranges.h"

namespace hangscan {

// Demangles a C++ symbol; returns the input when it is not mangled.
std::string demangle(const char* name);

// Frames for `addr` (an address in `mod`'s Dwfl address space, already pc-1 for return
// addresses): inline frames innermost first, then the native frame. pc, offset, module and
// build_id are left for the caller.
std::vector<Frame> symbolize_module_address(Dwfl_Module* mod, std::uint64_t addr);

// One offline Dwfl (ELF symbols) and one DebugImage (DWARF, opened on first use) per module
// file, shared across targets. Thread-safe.
class OfflineModules {
 public:
  OfflineModules() = default;
  ~OfflineModules();
  OfflineModules(const OfflineModules&) = delete;
  OfflineModules& operator=(const OfflineModules&) = delete;

  // `vaddr` is the address in the file's own ELF address space (pc minus load bias).
  std::vector<Frame> symbolize(const std::string& key, const std::string& path,
                               std::uint64_t vaddr);
  // Starts opening the DWARF of these modules (key, path) on other threads (inflating it is
  // the slow part), so that they inflate side by side while names are looked up. Modules whose
  // debug file is found by build-id start at once, before any module file is opened (opening
  // libtorch_cpu's 120 MB file alone takes milliseconds); the others once opened.
  void prefetch(const std::vector<std::pair<std::string, std::string>>& modules);
  // Looks up the ELF symbols of all of `vaddrs` in one pass over the module's table;
  // symbolize() then takes them from there.
  void prefetch_names(const std::string& key, const std::string& path,
                      const std::vector<std::uint64_t>& vaddrs);
  // Keys of the modules whose DWARF could not be loaded or read for lack of memory: their
  // frames have names but no file:line and no inline frames, and the report must say so.
  std::set<std::string> starved() const;

 private:
  struct Module {
    Dwfl* dwfl = nullptr;  // ELF symbols (names)
    Dwfl_Module* mod = nullptr;
    std::uint64_t bias = 0;
    bool opened = false;
    bool ok = false;
    bool debug_tried = false;
    std::unique_ptr<DebugImage> debug;                 // DWARF (file:line, inline frames)
    std::future<std::unique_ptr<DebugImage>> pending;  // `debug` while it is being opened
    std::map<std::uint64_t, std::optional<DwarfLines>> line_tables;  // by CU offset
    std::map<std::uint64_t, const char*> names;  // prefetched ELF symbols by vaddr (null: none)
    // The table's boundaries, read at the second batch of names (a one-shot capture asks once
    // per module and does not pay for them; a sampler asks again and again).
    std::unique_ptr<SymbolRanges> ranges;
    bool named_once = false;
  };
  Module& open(const std::string& key, const std::string& path);
  void start_debug(Module& m);                                // under mu_
  void start_debug_file(Module& m, const std::string& file);  // under mu_
  // The DWARF part of symbolize(); std::bad_alloc when memory ran out.
  std::vector<Frame> symbolize_dwarf(Module& m, std::uint64_t vaddr, Frame native, bool named);

  mutable std::mutex mu_;
  Inflater inflater_;
  std::map<std::string, Module> modules_;
  std::set<std::string> starved_;  // under mu_
  Dwfl_Callbacks callbacks_{};
  char* debuginfo_path_ = nullptr;
};

}  // namespace hangscan
