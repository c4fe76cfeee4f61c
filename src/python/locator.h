// Finding the CPython interpreter in a target: a named, ordered chain of strategies.
//
// Why: Python builds differ (static or shared libpython, PIE or not, stripped or not, 3.6
// without _PyRuntime). Each strategy is tried in order and leaves one line in the log
// (--verbose), so a failure says what was tried. Only memory and files are read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hangscan/result.h"
#include "python/python_reader.h"
#include "target/symbol_lookup.h"
#include "target/target.h"

namespace hangscan::python {

// A version guess from a module path: "libpython3.8.so.1.0" or "python3.11" give the minor;
// ".../versions/3.8.18/..." gives the patch level too.
struct VersionHint {
  int major = 0;
  int minor = -1;
  std::string full;  // "3.8.18" when known, else "3.8"
};
std::optional<VersionHint> version_from_path(const std::string& path);

// Runs the strategies on every Python module (libpython first, then the executable) and reads
// the live runtime among those found (see runtime_is_live). Errc::not_found when the target is not
// Python (quietly: nothing Python-like is mapped); Errc::unsupported naming the version when it is
// Python but cannot be read.
Result<Located> locate_interpreter(Target& target, std::vector<std::string>* log);

// Whether a runtime runs: one of its interpreters has a thread state that points back to it.
// Why: a process can map two runtimes (Debian's python3 carries its own; an extension linking
// libpython3.X.so brings another, never initialized, whose symbols the executable's interpose);
// locate_interpreter() reads the live one(s). Exposed for tests.
bool runtime_is_live(MemoryReader& mem, const RuntimeRoots& rt, const PyOffsets& o);

// The last-resort scan, exposed for tests: looks in [start, start+size) for an 8-aligned
// location holding a pointer to a plausible interpreter (its first thread state points back
// to it). Returns the address of that location.
std::optional<std::uint64_t> scan_for_interp_head(MemoryReader& mem, std::uint64_t start,
                                                  std::uint64_t size, const PyOffsets& o);

}  // namespace hangscan::python
