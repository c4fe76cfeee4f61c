// read_file_as() on real files: regular files only, resolution kept inside the given root,
// the target's credentials taken on the reading thread only, sizes bounded.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "proc/target_file.h"

namespace hangscan {
namespace {

namespace fs = std::filesystem;

class TargetFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hs-target-file-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
    write("a.py", "x = 1\ny = 2\n", 0644);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text, mode_t mode) {
    std::ofstream(dir_ + "/" + name) << text;
    ::chmod((dir_ + "/" + name).c_str(), mode);
  }
  Result<TargetFile> read(const std::string& name, bool beneath = false) {
    TargetFileRequest r;
    r.root = dir_;
    r.name = name;
    r.beneath = beneath;
    return read_file_as(r);
  }

  std::string dir_;
};

TEST(FileCredentials, ParsesFsIdsAndGroups) {
  auto c =
      parse_file_credentials("Name:\tx\nUid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\nGroups:\t10 20 \n");
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (FileCredentials{4, 8, {10, 20}}));
  auto none = parse_file_credentials("Uid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\nGroups:\n");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->groups.empty());
  EXPECT_FALSE(parse_file_credentials("Uid:\t1\t2\t3\t4\n"));
  EXPECT_FALSE(parse_file_credentials("Uid:\t1\t2\nGid:\t5\t6\t7\t8\n"));
  EXPECT_FALSE(parse_file_credentials("Uid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\nGroups:\t1 x\n"));
}

TEST(FileCredentials, OwnProcess) {
  auto c = read_file_credentials(::getpid());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->uid, static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))));
  EXPECT_EQ(c->gid, static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))));
}

TEST_F(TargetFileTest, ReadsARegularFile) {
  auto f = read("/a.py");
  ASSERT_TRUE(f) << f.error().what();
  EXPECT_EQ(f->text, "x = 1\ny = 2\n");
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/a.py").c_str(), &st), 0);
  EXPECT_EQ(f->changed_ns, std::max(st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
                                    st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec));
}

TEST_F(TargetFileTest, StaysInTheRoot) {
  fs::create_symlink("/a.py", dir_ + "/abs-link");  // absolute: the root's /a.py
  auto linked = read("/abs-link");
  ASSERT_TRUE(linked) << linked.error().what();
  EXPECT_EQ(linked->text, "x = 1\ny = 2\n");
  auto up = read("/../../a.py");  // ".." stops at the root
  ASSERT_TRUE(up) << up.error().what();
  EXPECT_EQ(up->text, "x = 1\ny = 2\n");
  EXPECT_EQ(read("/proc/self/root" + dir_ + "/a.py").error().code, Errc::not_found);
}

TEST_F(TargetFileTest, RelativeNamesStayBeneath) {
  ASSERT_TRUE(read("a.py", true));
  auto up = read("../" + fs::path(dir_).filename().string() + "/a.py", true);
  ASSERT_FALSE(up);
  EXPECT_EQ(up.error().code, Errc::permission);
}

TEST_F(TargetFileTest, RefusesWhatIsNotARegularFile) {
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0666), 0);
  auto fifo = read("/fifo");  // no writer: an open for reading would wait for ever
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().code, Errc::bad_data);
  EXPECT_EQ(fifo.error().what(), "it is not a regular file");
  TargetFileRequest r;
  r.root = "/";
  r.name = "/dev/zero";
  EXPECT_EQ(read_file_as(r).error().code, Errc::bad_data);
  r.name = "/proc/self/root/etc/passwd";  // a magic link
  EXPECT_EQ(read_file_as(r).error().code, Errc::permission);
}

TEST_F(TargetFileTest, OpensOnlyRegularFiles) {
  int fd = open_regular_file(dir_ + "/a.py");
  ASSERT_GE(fd, 0);
  char buf[5] = {};
  EXPECT_EQ(::read(fd, buf, 5), 5);
  EXPECT_EQ(std::string(buf, 5), "x = 1");
  ::close(fd);
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0666), 0);
  errno = 0;
  EXPECT_EQ(open_regular_file(dir_ + "/fifo"), -1);  // returns at once: no writer is awaited
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(open_regular_file("/dev/zero"), -1);
  EXPECT_EQ(open_regular_file(dir_), -1);
  EXPECT_EQ(open_regular_file(dir_ + "/none"), -1);
}

TEST_F(TargetFileTest, BoundsTheSize) {
  TargetFileRequest r;
  r.root = dir_;
  r.name = "/a.py";
  r.max_bytes = 4;
  auto f = read_file_as(r);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().what(), "it is larger than 4 bytes");
}

TEST_F(TargetFileTest, ReadsWithTheTargetsCredentials) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to take another user's credentials";
  write("secret.py", "password = 1\n", 0600);
  TargetFileRequest r;
  r.root = dir_;
  r.name = "/secret.py";
  r.as = FileCredentials{65534, 65534, {}};
  auto refused = read_file_as(r);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::permission);
  EXPECT_EQ(refused.error().what(), "the process's user (uid 65534) may not read it");
  r.name = "/a.py";
  ASSERT_TRUE(read_file_as(r));
  r.name = "/secret.py";
  r.as = FileCredentials{0, 0, {}};
  ASSERT_TRUE(read_file_as(r));
  // Only the reading thread changed: this one still reads as root.
  EXPECT_EQ(::setfsuid(static_cast<uid_t>(-1)), 0);
  EXPECT_EQ(::setfsgid(static_cast<gid_t>(-1)), 0);
}

TEST_F(TargetFileTest, OneReaderServesManyFilesWithTheSameChecks) {
  write("b.py", "z = 3\n", 0644);
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0666), 0);
  TargetFileReader reader;
  TargetFileRequest r;
  r.root = dir_;
  r.name = "/a.py";
  auto a = reader.read(r);
  ASSERT_TRUE(a) << a.error().what();
  EXPECT_EQ(a->text, "x = 1\ny = 2\n");
  r.name = "/fifo";  // refused on the reader's thread too, and the thread serves on
  EXPECT_EQ(reader.read(r).error().code, Errc::bad_data);
  r.name = "/b.py";
  auto b = reader.read(r);
  ASSERT_TRUE(b) << b.error().what();
  EXPECT_EQ(b->text, "z = 3\n");
  r.name = "/none";
  EXPECT_EQ(reader.read(r).error().code, Errc::not_found);
}

TEST_F(TargetFileTest, ReaderKeepsEachIdentityApart) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to take another user's credentials";
  write("secret.py", "password = 1\n", 0600);
  TargetFileReader reader;
  TargetFileRequest r;
  r.root = dir_;
  r.name = "/secret.py";
  r.as = FileCredentials{65534, 65534, {}};
  EXPECT_EQ(reader.read(r).error().code, Errc::permission);
  r.as = FileCredentials{0, 0, {}};  // other credentials: not read on nobody's thread
  ASSERT_TRUE(reader.read(r));
  r.as = FileCredentials{65534, 65534, {}};
  EXPECT_EQ(reader.read(r).error().code, Errc::permission);
  EXPECT_EQ(::setfsuid(static_cast<uid_t>(-1)), 0);
}

}  // namespace
}  // namespace hangscan
