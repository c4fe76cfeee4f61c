// _Py_DebugOffsets: CPython 3.13+ describes its own layout at the start of _PyRuntime.
//
// Why: from 3.13 on hangscan needs no per-version table; the target tells us every offset.
// The struct itself changes between minor versions (3.14 inserted fields), so its field order
// per minor version is data here too, and unknown minors are refused with a clear message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "python/layout.h"
#include "target/memory_reader.h"

namespace hangscan::python {

inline constexpr char kDebugCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};

// The names of the uint64 fields that follow the 8-byte cookie, in order, for one minor
// version ("interpreter_state.threads_head"). Empty when the minor is not known.
const std::vector<std::string>& debug_offsets_fields(int minor);

// Max bytes of the struct over all known versions (what to read from the target).
std::size_t debug_offsets_max_size();

// Parses the raw struct (cookie first) into a PyLayout. `version_hex` receives the
// PY_VERSION_HEX it carries.
Result<PyLayout> parse_debug_offsets(const std::uint8_t* data, std::size_t len,
                                     std::uint64_t* version_hex = nullptr);

// True when `runtime` starts with the cookie.
bool has_debug_cookie(MemoryReader& mem, std::uint64_t runtime);

// "3.13.0" from a PY_VERSION_HEX (0x030d00f0); final releases have no suffix.
std::string version_from_hex(std::uint64_t hex);

}  // namespace hangscan::python
