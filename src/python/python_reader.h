// PythonReader: the Python frames of every thread of a CPython process, read from outside.
//
// Why: most hung ranks are Python programs, and the interesting frames are Python frames.
// The work is split to keep the target's pause short (design principle 2): locate() runs
// before the freeze (symbols, version, layout); walk() runs while the target is stopped and
// copies only raw pointers (thread states, frame addresses, code addresses, instruction
// pointers) plus local values, which change; decode() runs after resume and turns code objects
// (immutable) into names, files and lines, with a cache keyed by code address.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hangscan/model.h"
#include "hangscan/result.h"
#include "python/asyncio_layout.h"
#include "python/layout.h"
#include "python/objects.h"
#include "python/torch_repr.h"
#include "target/memory_reader.h"
#include "target/target.h"

namespace hangscan::python {

// Caps that bound the work on a corrupt or changing target.
inline constexpr std::size_t kMaxInterpreters = 64;
inline constexpr std::size_t kMaxThreads = 4096;
inline constexpr std::size_t kMaxFrames = 4096;
inline constexpr std::size_t kMaxLocals = 256;
inline constexpr std::size_t kMaxTotalFrames = 65536;  // over all threads of one walk

inline constexpr std::uint64_t kUnresolvedBytecode = ~std::uint64_t{0};

struct RawPythonFrame {
  std::uint64_t frame_addr = 0;
  std::uint64_t code_addr = 0;
  std::uint64_t instr = 0;  // f_lasti (3.6-3.10, as unsigned bits of the int) or instr pointer
  bool is_entry = false;    // first Python frame of one eval-loop call (innermost first order)
  // On an entry frame (3.11+): an address inside its eval-loop call's C stack frame (the
  // _PyCFrame on 3.11, the entry shim on 3.12+), 0 unknown. It names the native eval-loop
  // frame without symbols (merge.h).
  std::uint64_t eval_marker = 0;
  // 3.14t: the start of the thread-local bytecode copy `instr` points into (0: the code
  // object's own co_code_adaptive; kUnresolvedBytecode: not found).
  std::uint64_t bytecode = 0;
  std::vector<Local> locals;
};

struct RawPythonThread {
  std::uint64_t tstate = 0;
  std::optional<int> native_tid;
  std::uint64_t pthread_id = 0;
  bool holds_gil = false;
  bool gc_collecting = false;          // runs the cycle collector (see walk())
  std::vector<RawPythonFrame> frames;  // innermost first
  std::string error;                   // why the frame chain was cut short, if it was
};

struct RawPythonState {
  std::vector<RawPythonThread> threads;
  std::vector<std::uint64_t> interpreters;
  std::uint64_t finalizing = 0;  // the thread state running Py_Finalize, 0: not finalizing
  bool gc_collecting = false;    // some interpreter's cycle collector is running
  std::vector<std::string> diagnostics;
};

struct PythonFrame {
  Frame frame;                    // frame.kind == FrameKind::python
  bool entry = false;             // see RawPythonFrame::is_entry
  std::uint64_t eval_marker = 0;  // see RawPythonFrame::eval_marker
};

struct PythonThreadStack {
  std::optional<int> native_tid;
  std::uint64_t pthread_id = 0;
  bool gil = false;
  bool idle = false;                // a thread state with no Python frame
  bool gc_collecting = false;       // runs the cycle collector
  bool finalizing = false;          // runs Py_Finalize: the interpreter is shutting down
  std::optional<std::string> name;  // threading.Thread name
  std::vector<PythonFrame> frames;  // innermost first
  std::vector<std::string> notes;
};

// 3.11: gives each entry frame of `t` (innermost first) the address of its eval-loop call's
// _PyCFrame from `calls` (the thread's chain, innermost first, without its root) when they pair
// one to one; otherwise leaves them unmarked (the merge then goes by names). Why shared: the
// walk here and the recorder's samples (src/watch) read the same chain.
void pair_cframes(RawPythonThread& t, const std::vector<std::uint64_t>& calls);

// The roots of one CPython runtime (its interpreter list, GIL and flags). Why apart from
// Located: a process can map more than one runtime (a static python3 whose extension links
// libpython3.X.so); each live one is walked from its own roots.
struct RuntimeRoots {
  std::uint64_t interp_head_ptr = 0;      // address of the pointer to the first interpreter
  std::uint64_t gil_current_ptr = 0;      // 3.6: address of _PyThreadState_Current; 0 otherwise
  std::uint64_t gil_struct = 0;           // 3.7-3.11: address of _PyRuntime.ceval.gil
  std::uint64_t finalizing_ptr = 0;       // address of the finalizing PyThreadState*; 0 unknown
  std::uint64_t gc_collecting_ptr = 0;    // 3.6-3.8: address of the collector's int flag
  std::uint64_t gil_last_holder_ptr = 0;  // 3.6: address of ceval_gil.h's gil_last_holder
  std::string module;                     // module holding the runtime
};

// Where the interpreter is, as found by locate(): the live runtime (the roots this struct
// holds) and any further live runtimes of the same layout, walked after it.
struct Located : RuntimeRoots {
  std::vector<RuntimeRoots> more_runtimes;
  PyLayout layout;
  std::string version;  // "3.11.2" (or "3.8" when the patch level is unknown)
  std::string locator;  // strategy that found it
  // 3.14+: the _asyncio module's own description of its tasks (asyncio_debug.h); when absent,
  // why (3.8-3.13 use generated rows instead).
  std::optional<AsyncioLayout> asyncio;
  std::string asyncio_missing;
  // The layout of the target's torch release for tensors in --locals (torch_repr.h); nullptr
  // when torch is not imported or its release has no generated row.
  const TorchLayout* torch = nullptr;
};

class PythonReader {
 public:
  // Before the freeze: finds the interpreter, its version and layout. Errc::not_found when the
  // target is not Python; Errc::unsupported (naming the version) when it cannot be read.
  static Result<std::unique_ptr<PythonReader>> locate(Target& target,
                                                      std::vector<std::string>* log);
  // For tests and cores: a reader over an already known location.
  explicit PythonReader(Located where) : where_(std::move(where)) {}

  const std::string& version() const { return where_.version; }
  const std::string& locator() const { return where_.locator; }
  const PyLayout& layout() const { return where_.layout; }
  const Located& located() const { return where_; }

  // While stopped: raw pointers of every thread's frames (and local values when asked).
  RawPythonState walk(MemoryReader& mem, bool with_locals);
  // After resume: names, files and lines. Code objects are cached across calls. Thread names
  // are read here too (they change only when threads start or end; a torn read is dropped).
  std::vector<PythonThreadStack> decode(const RawPythonState& raw, MemoryReader& mem);
  // Why the thread names are missing from the last decode(), empty when they were read.
  const std::string& names_missing() const { return names_missing_; }
  // After resume: the pending asyncio tasks of every interpreter of `raw`, by name, each with
  // where its coroutines are suspended (asyncio_tasks.h). Empty when there are none.
  std::vector<AsyncioTask> asyncio_tasks(const RawPythonState& raw, MemoryReader& mem);
  // Why the last asyncio_tasks() found none, or left some out ("" when it did not).
  const std::string& asyncio_missing() const { return asyncio_missing_; }

 private:
  struct CodeInfo {
    bool valid = false;
    std::string function;  // qualified name where the version has one
    std::string file;
    int firstlineno = 0;
    std::string linetable;
    std::string error;
  };
  struct GilState {
    std::uint64_t holder = 0;       // tstate holding the GIL, 0 if none/unknown
    std::uint64_t last_holder = 0;  // tstate that took it last (held or not)
  };

  GilState read_gil(MemoryReader& mem, const RuntimeRoots& rt, std::uint64_t interp);
  bool gc_collecting(MemoryReader& mem, const RuntimeRoots& rt, std::uint64_t interp);
  // Appends the interpreters and threads of one runtime to `st`.
  void walk_runtime(MemoryReader& mem, const RuntimeRoots& rt, ObjectReader* objects,
                    RawPythonState& st);
  // Walks one thread's frames; returns the next thread state, nullopt when unreadable.
  std::optional<std::uint64_t> walk_thread(MemoryReader& mem, ObjectReader* objects,
                                           std::uint64_t tstate, RawPythonThread& out);
  // 3.11: pairs the entry frames with the _PyCFrame chain (their eval_marker).
  void mark_cframes(MemoryReader& mem, std::uint64_t cframe, RawPythonThread& out);
  void read_locals(MemoryReader& mem, ObjectReader& objects, std::uint64_t frame,
                   std::uint64_t code, RawPythonFrame& out);
  const CodeInfo& code_info(MemoryReader& mem, std::uint64_t code);
  // The line of a frame, and on 3.11+ its columns (into `out`).
  void frame_position(const CodeInfo& info, const RawPythonFrame& f, Frame& out) const;

  Located where_;
  std::map<std::uint64_t, CodeInfo> code_cache_;
  std::size_t walk_budget_ = 0;  // frames (and non-code frames) left for the current walk
  std::string names_missing_;
  std::string asyncio_missing_;
};

}  // namespace hangscan::python
