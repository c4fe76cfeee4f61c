// A launcher's own list of its workers: torchrun's pid -> local rank of each worker it started,
// read from its memory.
//
// Why: a reaped worker leaves no /proc entry and no environment, and the kernel's OOM record
// names only its pid. torchrun keeps each worker's subprocess.Popen (the pid it started) by
// local rank until it exits, so a kill the kernel recorded is tied to its local rank exactly,
// not inferred from which rank is missing. Read only; every object's type is checked by name
// and every size bounded; empty when the launcher's frames do not hold the list.
#pragma once

#include <map>

#include "python/python_reader.h"
#include "target/memory_reader.h"

namespace hangscan::python {

// torch.distributed.elastic's SubprocessContext (multiprocessing/api.py, 1.9-2.x):
// `subprocess_handlers` {local_rank: SubprocessHandler(proc=Popen(pid))}, reached through the
// `self` of a frame of one of its methods (`_close`, `_poll`, `wait`) or of the agent's
// (LocalElasticAgent: `_pcontext`). Returns pid -> local rank.
std::map<int, int> launcher_children(const PythonReader& reader, const RawPythonState& raw,
                                     MemoryReader& mem);

}  // namespace hangscan::python
