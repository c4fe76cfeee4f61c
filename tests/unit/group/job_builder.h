// Small builders for hand-made JobSnapshots in group tests.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hangscan/model.h"

namespace hangscan::testing {

inline Frame py(std::string function, std::string file, int line) {
  Frame f;
  f.kind = FrameKind::python;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  return f;
}

inline Frame py_builtin(std::string function) {
  Frame f;
  f.kind = FrameKind::python;
  f.function = std::move(function);
  return f;
}

inline Frame native(std::string function, std::string module, std::uint64_t offset) {
  Frame f;
  f.kind = FrameKind::native;
  f.function = std::move(function);
  f.module = std::move(module);
  f.offset = offset;
  f.pc = 0x400000 + offset;
  return f;
}

// A rank whose main thread has `frames` (innermost first).
inline ProcessSnapshot rank_process(int rank, int pid, std::vector<Frame> frames, char state = 'S',
                                    std::string host = "n1", std::optional<int> world_size = {}) {
  ProcessSnapshot p;
  p.host = std::move(host);
  p.pid = pid;
  p.rank = rank;
  p.world_size = world_size;
  p.role = "rank";
  p.state = state;
  ThreadSnapshot t;
  t.tid = pid;
  t.name = "python3";
  t.state = state;
  t.is_main = true;
  t.frames = std::move(frames);
  p.threads.push_back(std::move(t));
  return p;
}

// The hang_gloo.py shape: ranks in all_reduce, or in time.sleep at line 19.
inline std::vector<Frame> in_all_reduce() {
  return {py("all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
             1541),
          py("worker", "/tmp/hang_gloo.py", 20), py("<module>", "/tmp/hang_gloo.py", 30)};
}
inline std::vector<Frame> in_sleep() {
  return {py_builtin("time.sleep"), py("worker", "/tmp/hang_gloo.py", 19),
          py("<module>", "/tmp/hang_gloo.py", 30)};
}

}  // namespace hangscan::testing
