// OutputDir: files are created new in a directory opened once, a planted link is replaced and
// never followed, and a directory or link of another user is refused (the stall bundle and
// every other writer rely on exactly this).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "util/safe_output.h"

namespace hangscan {
namespace {

namespace fs = std::filesystem;
constexpr uid_t kNobody = 65534;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class SafeOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hs-safe-output-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    std::ofstream(root_ / "victim") << "victim\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(SafeOutput, APlantedLinkIsReplacedAndItsTargetKept) {
  fs::create_directory(root_ / "out");
  fs::create_symlink(root_ / "victim", root_ / "out" / "report.txt");
  auto dir = OutputDir::open((root_ / "out").string());
  ASSERT_TRUE(dir) << dir.error().what();
  ASSERT_TRUE(dir->write_file("report.txt", "the report\n"));
  EXPECT_EQ(slurp(root_ / "victim"), "victim\n");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(root_ / "out" / "report.txt")));
  EXPECT_EQ(slurp(root_ / "out" / "report.txt"), "the report\n");
  // A re-run replaces the file whole; no temporary file is left.
  ASSERT_TRUE(dir->write_file("report.txt", "second\n"));
  EXPECT_EQ(slurp(root_ / "out" / "report.txt"), "second\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(root_ / "out"), fs::directory_iterator()), 1);
}

TEST_F(SafeOutput, MissingDirectoriesAreMadeAndCreateNewNeverReplaces) {
  auto dir = OutputDir::open((root_ / "a" / "b").string(), {"--gcore-dir", true, 0700});
  ASSERT_TRUE(dir) << dir.error().what();
  EXPECT_EQ(fs::status(root_ / "a" / "b").permissions() & fs::perms::all, fs::perms::owner_all);
  fs::create_symlink(root_ / "victim", root_ / "a" / "b" / "core");
  auto fd = dir->create_new("core", 0600);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().sys_errno, EEXIST);
  auto made = dir->create_new("part", 0600);
  ASSERT_TRUE(made);
  ::close(*made);
  auto st = dir->publish("part", "core");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().sys_errno, EEXIST);
  EXPECT_EQ(slurp(root_ / "victim"), "victim\n");
  ASSERT_TRUE(dir->publish("part", "core2"));
  EXPECT_FALSE(dir->has("part"));
  EXPECT_TRUE(dir->has("core2"));
}

TEST_F(SafeOutput, ASubdirectoryIsMadeNewOnly) {
  auto dir = OutputDir::open(root_.string());
  ASSERT_TRUE(dir);
  fs::create_symlink(root_, root_ / "stall-1");
  auto taken = dir->make_subdir("stall-1");
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().sys_errno, EEXIST);
  auto sub = dir->make_subdir("stall-2");
  ASSERT_TRUE(sub) << sub.error().what();
  EXPECT_EQ(sub->path(), (root_ / "stall-2").string());
  ASSERT_TRUE(sub->write_file("report.txt", "x"));
  EXPECT_EQ(slurp(root_ / "stall-2" / "report.txt"), "x");
}

TEST_F(SafeOutput, ANameThatWouldLeaveTheDirectoryIsRefused) {
  fs::create_directory(root_ / "out");
  auto dir = OutputDir::open((root_ / "out").string());
  ASSERT_TRUE(dir);
  for (const char* name : {"../escaped", "..", ".", "", "a/b"}) {
    auto st = dir->write_file(name, "x");
    ASSERT_FALSE(st) << name;
    EXPECT_EQ(st.error().sys_errno, EINVAL) << name;
  }
  EXPECT_FALSE(fs::exists(root_ / "escaped"));
  EXPECT_FALSE(dir->make_subdir(".."));
}

TEST_F(SafeOutput, OthersMayNotWriteTheDirectoryUnlessItIsSticky) {
  fs::create_directory(root_ / "open");
  ::chmod((root_ / "open").c_str(), 0777);
  auto dir = OutputDir::open((root_ / "open").string());
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().code, Errc::permission);
  EXPECT_EQ(dir.error().message, "refusing --output " + (root_ / "open").string() +
                                     ": others may write it (mode 0777) and replace what "
                                     "hangscan writes there");
  EXPECT_FALSE(dir.error().hint.empty());
  ::chmod((root_ / "open").c_str(), 01777);
  EXPECT_TRUE(OutputDir::open((root_ / "open").string()));
}

TEST_F(SafeOutput, ADirectoryOrLinkOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give files to nobody";
  fs::create_directory(root_ / "theirs");
  ASSERT_EQ(::chown((root_ / "theirs").c_str(), kNobody, kNobody), 0);
  auto dir = OutputDir::open((root_ / "theirs").string());
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().message, "refusing --output " + (root_ / "theirs").string() +
                                     ": it belongs to nobody (uid 65534), who could replace "
                                     "what hangscan writes there");
  fs::create_directory(root_ / "mine");
  fs::create_symlink(root_ / "mine", root_ / "link");
  ASSERT_EQ(::lchown((root_ / "link").c_str(), kNobody, kNobody), 0);
  auto via = OutputDir::open((root_ / "link").string(), {"-o", false, 0700});
  ASSERT_FALSE(via);
  EXPECT_EQ(via.error().message, "refusing -o " + (root_ / "link").string() +
                                     ": 'link' on the way is a symbolic link of nobody (uid "
                                     "65534); not followed");
  // The caller's own link is followed.
  ASSERT_EQ(::lchown((root_ / "link").c_str(), 0, 0), 0);
  EXPECT_TRUE(OutputDir::open((root_ / "link").string(), {"-o", false, 0700}));
}

TEST_F(SafeOutput, AFileInTheWayOrAMissingDirectoryIsAnErrorWithAHint) {
  auto none = OutputDir::open((root_ / "missing").string(), {"-o", false, 0700});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message,
            "cannot open -o " + (root_ / "missing").string() + ": No such file or directory");
  EXPECT_EQ(none.error().hint, "choose a directory you can write with -o DIR");
  auto file = OutputDir::open((root_ / "victim" / "x").string());
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().sys_errno, ENOTDIR);
  auto empty = OutputDir::open("");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, Errc::usage);
}

}  // namespace
}  // namespace hangscan
