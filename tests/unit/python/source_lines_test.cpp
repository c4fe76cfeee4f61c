// SourceLines over a fake ModuleSource: which files' text is shown, which are withheld and why
// (refused, changed after the process started, a stuck file system), each named once.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "python/source_lines.h"

namespace hangscan::python {
namespace {

constexpr std::int64_t kStart = 1'000'000'000'000;  // the process start, ns since the epoch

class FileSource : public ModuleSource {
 public:
  int pid() const override { return 7; }
  bool is_live() const override { return true; }
  MemoryReader& memory() override { return none_; }
  const std::vector<Mapping>& mappings() const override { return maps_; }
  std::optional<std::string> local_path(const Mapping&) const override { return std::nullopt; }
  Result<TargetFile> read_target_file(const std::string& name, std::size_t) override {
    reads.push_back(name);
    auto it = files.find(name);
    if (it == files.end()) return Error(Errc::not_found, "no such file");
    return it->second;
  }
  std::optional<std::int64_t> started_unix_ns() const override { return kStart; }

  std::map<std::string, Result<TargetFile>> files;
  std::vector<std::string> reads;

 private:
  struct NoMemory : MemoryReader {
    std::size_t read(std::uint64_t, void*, std::size_t) override { return 0; }
  } none_;
  std::vector<Mapping> maps_;
};

TEST(SourceLines, ShowsOldFilesAndWithholdsChangedOnes) {
  FileSource src;
  src.files.emplace("/old.py", TargetFile{"a\r\nb\n", kStart - 1});
  src.files.emplace("/new.py", TargetFile{"x\ny\n", kStart + kSourceChangeSlackNs + 1});
  SourceLines lines(src);
  EXPECT_EQ(lines.line("/old.py", 1), "a");
  EXPECT_EQ(lines.line("/old.py", 2), "b");
  EXPECT_EQ(lines.line("/old.py", 3), std::nullopt);
  EXPECT_EQ(lines.line("/new.py", 1), std::nullopt);
  EXPECT_EQ(lines.line("/new.py", 2), std::nullopt);   // named once
  EXPECT_EQ(lines.line("/gone.py", 1), std::nullopt);  // missing: not a note
  EXPECT_EQ(lines.line("<string>", 1), std::nullopt);
  auto withheld = lines.take_withheld();
  ASSERT_EQ(withheld.size(), 1u);
  EXPECT_EQ(withheld[0].file, "/new.py");
  EXPECT_EQ(withheld[0].reason, "it changed after the process started");
  EXPECT_EQ(withheld[0].why, WithheldSource::Why::changed);
  EXPECT_TRUE(lines.take_withheld().empty());
  EXPECT_EQ(src.reads, (std::vector<std::string>{"/old.py", "/new.py", "/gone.py"}));
}

TEST(SourceLines, AStuckReadEndsTheReading) {
  FileSource src;
  src.files.emplace("/secret.py", Error(Errc::permission,
                                        "the process's user (uid 9) may not "
                                        "read it"));
  src.files.emplace("/nfs/a.py", Error(Errc::timeout, "reading it took longer than 1000 ms"));
  src.files.emplace("/b.py", TargetFile{"b\n", 0});
  SourceLines lines(src);
  EXPECT_EQ(lines.line("/secret.py", 1), std::nullopt);
  EXPECT_EQ(lines.line("/nfs/a.py", 1), std::nullopt);
  EXPECT_EQ(lines.line("/b.py", 1), std::nullopt);  // not even tried
  EXPECT_EQ(src.reads, (std::vector<std::string>{"/secret.py", "/nfs/a.py"}));
  auto withheld = lines.take_withheld();
  ASSERT_EQ(withheld.size(), 3u);
  EXPECT_EQ(withheld[0].why, WithheldSource::Why::refused);
  EXPECT_EQ(withheld[0].reason, "the process's user (uid 9) may not read it");
  EXPECT_EQ(withheld[1].why, WithheldSource::Why::slow);
  EXPECT_EQ(withheld[1].reason, "reading it took longer than 1000 ms");
  EXPECT_EQ(withheld[2].why, WithheldSource::Why::slow);
  EXPECT_EQ(withheld[2].reason, "not read: an earlier source file took too long to read");
}

}  // namespace
}  // namespace hangscan::python
