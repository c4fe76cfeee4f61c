// capture_process() never throws: a failure inside one target's capture (here the exception
// std::stoi threw for an executable named python3.99999999999) is that snapshot's error
// diagnostic, so callers go on with their other targets.
#include <gtest/gtest.h>

#include <stdexcept>

#include "capture/capture.h"

namespace hangscan {
namespace {

class NoMemory : public MemoryReader {
 public:
  std::size_t read(std::uint64_t, void*, std::size_t) override { return 0; }
};

// A core-like target whose thread description throws what a library might throw.
class ThrowingTarget : public Target {
 public:
  explicit ThrowingTarget(bool bad_alloc) : bad_alloc_(bad_alloc) {}
  int pid() const override { return 4242; }
  bool is_live() const override { return false; }
  std::string describe() const override { return "core odd.core"; }
  MemoryReader& memory() override { return memory_; }
  const std::vector<Mapping>& mappings() const override { return mappings_; }
  std::optional<std::string> local_path(const Mapping&) const override { return std::nullopt; }
  std::vector<int> thread_ids() override { return {4242}; }
  Result<std::unique_ptr<Freeze>> freeze(const Deadline&) override {
    return Error(Errc::internal, "not reached");
  }
  void describe_process(ProcessSnapshot& out) override {
    out.pid = 4242;
    out.cmdline = {"/opt/python3.99999999999"};
  }
  void describe_thread(ThreadSnapshot&) override {
    if (bad_alloc_) throw std::bad_alloc();
    throw std::invalid_argument("stoi");
  }
  std::vector<std::string> environment() override { return {}; }

 private:
  bool bad_alloc_;
  NoMemory memory_;
  std::vector<Mapping> mappings_;
};

TEST(CaptureProcess, AnExceptionIsTheTargetsDiagnostic) {
  ThrowingTarget target(false);
  SymbolCache symbols;
  ProcessSnapshot snap;
  ASSERT_NO_THROW(snap = capture_process(target, CaptureOptions{}, symbols));
  EXPECT_EQ(snap.pid, 4242);
  EXPECT_EQ(snap.cmdline, std::vector<std::string>{"/opt/python3.99999999999"});
  EXPECT_TRUE(snap.threads.empty());
  ASSERT_EQ(snap.diagnostics.size(), 1u);
  const Diagnostic& d = snap.diagnostics[0];
  EXPECT_EQ(d.severity, Diagnostic::Severity::error);
  EXPECT_EQ(d.message, "core odd.core: capture failed: internal error: stoi");
  EXPECT_EQ(d.pid, 4242);
  EXPECT_NE(d.hint.find("the other targets are reported"), std::string::npos) << d.hint;
}

TEST(CaptureProcess, OutOfMemoryIsSaidSo) {
  ThrowingTarget target(true);
  SymbolCache symbols;
  ProcessSnapshot snap = capture_process(target, CaptureOptions{}, symbols);
  ASSERT_EQ(snap.diagnostics.size(), 1u);
  EXPECT_EQ(snap.diagnostics[0].message, "core odd.core: capture failed: out of memory");
  // The machine's limit, not a bug: the hint says which limit, never "hangscan bug".
  EXPECT_NE(snap.diagnostics[0].hint.find("ulimit -v"), std::string::npos);
  EXPECT_EQ(snap.diagnostics[0].hint.find("bug"), std::string::npos);
}

}  // namespace
}  // namespace hangscan
