// Reader of hangscan JSON documents (`hangscan/1` and the agent wire format).
//
// Why: in multi-node mode the front end parses whatever came back from every node; a node
// that was killed mid-write, a broken agent or a hostile peer must produce an Error for that
// node, never a crash, an exception, or memory exhaustion in the front end.
#pragma once

#include <cstddef>
#include <string_view>

#include "hangscan/model.h"
#include "hangscan/result.h"

namespace hangscan {

class SharedStacks;

// Bounds applied before and while parsing one document. Defaults fit a node of 1,024 ranks
// with deep stacks; the merged front end reads one document per node.
struct ReadLimits {
  std::size_t max_bytes = 256u << 20;  // document size
  int max_depth = 32;                  // nesting of arrays/objects (the schema needs 7)
  std::size_t max_processes = 1u << 20;
  std::size_t max_threads = 1u << 16;       // per process
  std::size_t max_frames = 1u << 12;        // per stack
  std::size_t max_total_frames = 1u << 23;  // after expanding interned stacks (memory bound)
  std::size_t max_string = 1u << 16;        // bytes per string
  std::size_t max_list = 1u << 16;          // cmdline, notes, locals, diagnostics, ...
  std::size_t max_table = 1u << 20;         // agent "frames" and "stacks" tables
};

// Parses a `hangscan/1` document or an agent document (`hangscan-agent/1`, stacks interned).
// Any violation (syntax, truncation, wrong type, out-of-range number, a limit) is an
// Error{Errc::bad_data} whose message names the JSON path ("processes[3].threads[0].tid").
// Analysis fields (groups, suspects...) are ignored: they are recomputed from the snapshot.
// The document is read as it streams through the parser (no DOM of the stack tables; each
// process is converted as soon as it is complete, then dropped). With `shared`, frames and
// stacks are interned in that run-wide table (threads of every document read with it that
// stand in one stack share one FrameStack); without, in a table of this document's own.
// Agent documents are read by the fast reader (report/agent_reader.h) when it accepts them;
// everything else, and every document it declines, by the reference reader below.
Result<JobSnapshot> read_job_json(std::string_view text, const ReadLimits& limits = {},
                                  SharedStacks* shared = nullptr);

// The reference reader alone (nlohmann's SAX parser, a small DOM per process). Why exposed:
// tests hold the fast reader to it, document by document.
Result<JobSnapshot> read_job_json_reference(std::string_view text, const ReadLimits& limits = {},
                                            SharedStacks* shared = nullptr);

}  // namespace hangscan
