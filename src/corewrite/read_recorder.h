// ReadRecorder: a Target (and MemoryReader) that remembers every address range read.
//
// Why: a size-bounded core must keep the memory that readers of the core will need, and the
// surest way to know which memory that is, is to run the same readers (the Python locator,
// walk and decode; the environment reader) on the live process and write down what they
// touched. The core then keeps the mappings (or 1 MiB blocks of huge ones) holding those
// addresses: thread states, frames, code objects with their names, file names and line
// tables, the environment strings. Reads go through unchanged.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "target/target.h"

namespace hangscan {

class RecordingMemory : public MemoryReader {
 public:
  explicit RecordingMemory(MemoryReader& inner) : inner_(inner) {}
  std::size_t read(std::uint64_t addr, void* buf, std::size_t len) override;
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges() const { return ranges_; }

 private:
  MemoryReader& inner_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges_;
};

// Everything delegates to `inner`, except memory(), which records.
class RecordingTarget : public Target {
 public:
  explicit RecordingTarget(Target& inner) : inner_(inner), memory_(inner.memory()) {}

  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges() const {
    return memory_.ranges();
  }

  int pid() const override { return inner_.pid(); }
  bool is_live() const override { return inner_.is_live(); }
  std::string describe() const override { return inner_.describe(); }
  MemoryReader& memory() override { return memory_; }
  const std::vector<Mapping>& mappings() const override { return inner_.mappings(); }
  std::optional<std::string> local_path(const Mapping& m) const override {
    return inner_.local_path(m);
  }
  std::vector<int> thread_ids() override { return inner_.thread_ids(); }
  Result<std::unique_ptr<Freeze>> freeze(const Deadline& deadline) override {
    return inner_.freeze(deadline);
  }
  void describe_process(ProcessSnapshot& out) override { inner_.describe_process(out); }
  void describe_thread(ThreadSnapshot& out) override { inner_.describe_thread(out); }
  std::vector<std::string> environment() override { return inner_.environment(); }
  Result<TargetFile> read_target_file(const std::string& name, std::size_t max_bytes) override {
    return inner_.read_target_file(name, max_bytes);
  }
  std::optional<std::int64_t> started_unix_ns() const override { return inner_.started_unix_ns(); }

 private:
  Target& inner_;
  RecordingMemory memory_;
};

}  // namespace hangscan
