// The one watchdog of `watch --stall` (one machine and across a Slurm job's nodes): when it
// fires, that it fires once per stall, and when it fires again.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "watchdog/watchdog.h"

namespace hangscan {
namespace {

TEST(Watchdog, FiresOncePerStallAndAgainOnlyAfterNewerProgress) {
  Watchdog dog(3, "", "watched rank");
  EXPECT_EQ(dog.judge({false, 1.0, 99.0}, 100), "");
  EXPECT_FALSE(dog.would_fire({false, 1.0, 99.0}));
  EXPECT_TRUE(dog.would_fire({true, 3.4, 96.6}));
  EXPECT_EQ(dog.judge({true, 3.4, 96.6}, 100), "no watched rank made progress for 3 s");
  // The same stall, later: no second bundle.
  EXPECT_FALSE(dog.would_fire({true, 13.4, 96.6}));
  EXPECT_EQ(dog.judge({true, 13.4, 96.6}, 110), "");
  // Progress after the bundle (at 111), then a new stall: fires again.
  EXPECT_EQ(dog.judge({false, 0.5, 111.0}, 111.5), "");
  EXPECT_EQ(dog.judge({true, 4.0, 111.0}, 115), "no watched rank made progress for 4 s");
  // Across nodes: no progress known in these windows yet stalled (ranks waited from the start).
  Watchdog nodes(3, "", "rank on any node");
  EXPECT_EQ(nodes.judge({true, 5.2, std::nullopt}, 1000),
            "no rank on any node made progress for 5 s");
  EXPECT_EQ(nodes.judge({true, 9.0, std::nullopt}, 1004), "");
}

class StaleLog : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/hs-watchdog-log-XXXXXX";
    int fd = mkstemp(name);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path = name;
  }
  void TearDown() override { std::remove(path.c_str()); }
  // Sets the log's modification time `age_s` seconds ago.
  void written_ago(double age_s) {
    timeval now{};
    gettimeofday(&now, nullptr);
    timeval t[2] = {now, now};
    t[1].tv_sec -= static_cast<time_t>(age_s);
    ASSERT_EQ(utimes(path.c_str(), t), 0);
  }
  std::string path;
};

TEST_F(StaleLog, FiresOnceUntilTheLogIsWrittenAgain) {
  Watchdog dog(3, path, "watched rank");
  written_ago(1);
  EXPECT_EQ(dog.log_reason(), "");
  EXPECT_EQ(dog.judge({}, 100), "");
  written_ago(10);
  EXPECT_TRUE(dog.would_fire({}));
  EXPECT_EQ(dog.log_reason(), path + " was not written for 10 s");
  EXPECT_EQ(dog.judge({}, 101), path + " was not written for 10 s");
  // Still stale: fired already.
  EXPECT_EQ(dog.log_reason(), "");
  EXPECT_EQ(dog.judge({}, 102), "");
  // Written again, then stale again: fires again.
  written_ago(0);
  EXPECT_EQ(dog.judge({}, 103), "");
  written_ago(20);
  EXPECT_EQ(dog.judge({}, 104), path + " was not written for 20 s");
  // A log that cannot be read says nothing.
  EXPECT_EQ(log_stall("/nonexistent/hs-log", 3), "");
  EXPECT_EQ(log_stall("", 3), "");
}

}  // namespace
}  // namespace hangscan
