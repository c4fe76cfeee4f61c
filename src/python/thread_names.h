// Python thread names (threading.Thread(name=...)), read from the interpreter's memory.
//
// Why: a training process runs dozens of threads whose OS names say little ("python3",
// "pt_autograd_0" truncated to 15 bytes); the names the program gave them do. They live in
// the `threading` module's registry `_active` ({ident: Thread}), reached from sys.modules
// (interp->modules, interp->imports.modules from 3.12) without calling into the target.
// `ident` is the thread's pthread_t, which the thread state records as thread_id.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "hangscan/result.h"
#include "python/objects.h"

namespace hangscan::python {

inline constexpr std::size_t kMaxThreadName = 256;

// {pthread_t: name} of the threads `threading` knows in interpreter `interp`, never empty; an
// error saying why when nothing was read (the module not imported, not readable, no names).
Result<std::map<std::uint64_t, std::string>> read_thread_names(ObjectReader& objects,
                                                               const PyLayout& layout,
                                                               std::uint64_t interp);

}  // namespace hangscan::python
