// Finding the _asyncio module's own description of its tasks (3.14+) in a target.
//
// Why: from 3.14 the C Task's layout and the lists that hold every pending task are published
// by the _asyncio module itself (_Py_AsyncioModuleDebugOffsets in a section `.AsyncioDebug`
// of whichever file holds the module: its lib-dynload .so or the interpreter when built in),
// as _Py_DebugOffsets publishes the interpreter's. Reading it needs no table per build and
// works on stripped interpreters: section headers survive `strip`.
#pragma once

#include <string>

#include "hangscan/result.h"
#include "python/asyncio_layout.h"
#include "python/layout.h"
#include "target/memory_reader.h"
#include "target/symbol_lookup.h"

namespace hangscan::python {

// The AsyncioLayout of a 3.14+ target, from the `.AsyncioDebug` section of the first mapped
// module that has one (memory first, the file on disk when memory lacks it). An error saying why
// when no module has the section (asyncio not imported: not_found) or its bytes are not the
// struct (bad_data, io).
Result<AsyncioLayout> find_asyncio_layout(ModuleSymbols& syms, MemoryReader& mem,
                                          const PyLayout& layout);

}  // namespace hangscan::python
