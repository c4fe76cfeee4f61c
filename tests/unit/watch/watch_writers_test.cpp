// The watch writer registry: the formats `watch --format` offers and the bundle's timeline.*.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "watch/watch_writers.h"

namespace hangscan {
namespace {

TEST(WatchWriters, TextJsonAndHtmlInThatOrder) {
  EXPECT_EQ(watch_format_names(), (std::vector<std::string>{"text", "json", "html"}));
  EXPECT_FALSE(find_watch_writer("svg"));
  WatchDocument d{{{"processes", nlohmann::json::array()}}, "job 7: watched 0 processes\n"};
  EXPECT_EQ(find_watch_writer("text")->render(d), "job 7: watched 0 processes\n");
  EXPECT_EQ(find_watch_writer("json")->render(d), "{\n  \"processes\": []\n}\n");
  EXPECT_EQ(find_watch_writer("html")->extension, "html");
}

// A process name is bytes the target chose: one that is not UTF-8 is replaced, never a throw
// (the JSON writer once threw on it and ended hangscan).
TEST(WatchWriters, NamesThatAreNotUtf8AreReplaced) {
  WatchDocument d{{{"processes", {{{"pid", 7}, {"comm", std::string("a\xff\xfe")}}}}}, ""};
  std::string out = find_watch_writer("json")->render(d);
  EXPECT_NE(out.find("\"comm\": \"a\xef\xbf\xbd\xef\xbf\xbd\""), std::string::npos) << out;
  std::string page = find_watch_writer("html")->render(d);
  EXPECT_NE(page.find("a\xef\xbf\xbd\xef\xbf\xbd"), std::string::npos);
}

}  // namespace
}  // namespace hangscan
