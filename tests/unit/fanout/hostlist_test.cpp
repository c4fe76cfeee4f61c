// Host lists, hostfiles and name validation: exact expansions and exact rejections.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fanout/hostlist.h"

namespace hangscan {
namespace {

using Names = std::vector<std::string>;

Names expand(const std::string& text) {
  auto r = parse_hostlist(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().what());
  return r.ok() ? *r : Names{};
}

std::string rejection(const std::string& text, std::size_t max_hosts = kMaxHosts) {
  auto r = parse_hostlist(text, max_hosts);
  EXPECT_FALSE(r.ok()) << text;
  if (r.ok()) return {};
  EXPECT_EQ(r.error().code, Errc::usage);
  return r.error().what();
}

TEST(Hostlist, SlurmRangesAndSingles) {
  EXPECT_EQ(expand("node-[21,23-26]"),
            (Names{"node-21", "node-23", "node-24", "node-25", "node-26"}));
  EXPECT_EQ(expand("n[1-3],gpu7"), (Names{"n1", "n2", "n3", "gpu7"}));
  EXPECT_EQ(expand("gpu7"), (Names{"gpu7"}));
  EXPECT_EQ(expand("n[5]"), (Names{"n5"}));
}

TEST(Hostlist, ZeroPaddingFollowsTheLowerBound) {
  EXPECT_EQ(expand("n[01-03]"), (Names{"n01", "n02", "n03"}));
  EXPECT_EQ(expand("n[08-10]"), (Names{"n08", "n09", "n10"}));
  EXPECT_EQ(expand("n[098-101]"), (Names{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand("n[9-11]"), (Names{"n9", "n10", "n11"}));
  EXPECT_EQ(expand("n[0-1]"), (Names{"n0", "n1"}));
}

TEST(Hostlist, SeveralBracketGroupsAreAProduct) {
  EXPECT_EQ(expand("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expand("rack[1,3]-node[01-02].ib"),
            (Names{"rack1-node01.ib", "rack1-node02.ib", "rack3-node01.ib", "rack3-node02.ib"}));
}

TEST(Hostlist, SeparatorsAndDuplicates) {
  EXPECT_EQ(expand(" n1, n2 \n n[1-3]\tgpu7,,"), (Names{"n1", "n2", "n3", "gpu7"}));
}

TEST(Hostlist, RejectsBadSyntax) {
  EXPECT_NE(rejection("n[1-3").find("unbalanced '['"), std::string::npos);
  EXPECT_NE(rejection("n1-3]").find("unbalanced ']'"), std::string::npos);
  EXPECT_NE(rejection("n[3-1]").find("reversed range '3-1'"), std::string::npos);
  EXPECT_NE(rejection("n[]").find("empty brackets"), std::string::npos);
  EXPECT_NE(rejection("n[a-b]").find("bad number 'a'"), std::string::npos);
  EXPECT_NE(rejection("n[1-]").find("bad number ''"), std::string::npos);
  EXPECT_NE(rejection("n[[1-2]]").find("nested"), std::string::npos);
  EXPECT_NE(rejection("n[1234567890-1234567891]").find("bad number"), std::string::npos);
  EXPECT_EQ(rejection(" , "), "empty host list");
}

TEST(Hostlist, RejectsShellMetacharactersAndOptionsInNames) {
  for (const char* bad : {"n1;reboot", "n$(id)", "n`id`", "a|b", "n1&", "a>b", "-oProxyCommand=x",
                          "root@n1", "^hosts", "n'1", "n\"1", "n\\1", ".hidden"}) {
    std::string why = rejection(bad);
    EXPECT_NE(why.find("host name"), std::string::npos) << bad << ": " << why;
  }
  EXPECT_NE(rejection(std::string(254, 'a')).find("longer than 253"), std::string::npos);
}

TEST(Hostlist, RejectsHugeExpansions) {
  EXPECT_NE(rejection("n[1-100]", 50).find("more than 50 hosts"), std::string::npos);
  EXPECT_NE(rejection("r[1-10]n[1-10]", 50).find("more than 50 hosts"), std::string::npos);
  EXPECT_NE(rejection("n[0-999999999]").find("more than"), std::string::npos);
  EXPECT_TRUE(parse_hostlist("n[1-50]", 50).ok());
}

TEST(Hostlist, CompressIsTheInverse) {
  EXPECT_EQ(compress_hostlist({"n1", "n2", "n3", "gpu7"}), "n[1-3],gpu7");
  EXPECT_EQ(compress_hostlist({"node-21", "node-23", "node-24", "node-25", "node-26"}),
            "node-[21,23-26]");
  EXPECT_EQ(compress_hostlist({"n03", "n01", "n02", "n01"}), "n[01-03]");
  EXPECT_EQ(compress_hostlist({"login", "n5"}), "login,n5");
  EXPECT_EQ(compress_hostlist({}), "");
  for (const char* text :
       {"n[1-3],gpu7", "node-[21,23-26]", "n[01-10]", "r[1-2]n[1-2],x", "a,b,c9,c10"}) {
    Names names = expand(text);
    Names again = expand(compress_hostlist(names));
    std::sort(names.begin(), names.end());
    std::sort(again.begin(), again.end());
    EXPECT_EQ(names, again) << text << " -> " << compress_hostlist(expand(text));
  }
}

TEST(HostName, Validation) {
  EXPECT_TRUE(validate_host_name("n1").ok());
  EXPECT_TRUE(validate_host_name("gpu-a100_7.cluster.example").ok());
  EXPECT_EQ(validate_host_name("").error().what(), "empty host name");
  EXPECT_FALSE(validate_host_name("n 1").ok());
  EXPECT_FALSE(validate_host_name("n1\n").ok());
}

TEST(JobId, Validation) {
  EXPECT_TRUE(validate_job_id("2180718").ok());
  EXPECT_TRUE(validate_job_id("123_4").ok());
  EXPECT_TRUE(validate_job_id("123+1").ok());
  for (const char* bad : {"", "abc", "12 3", "123_", "_4", "1;id", "-1", "123_4_5", "12$"}) {
    auto st = validate_job_id(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.error().code, Errc::usage);
  }
  EXPECT_FALSE(validate_job_id(std::string(65, '1')).ok());
}

TEST(Hostfile, PlainDeepSpeedAndComments) {
  auto r = parse_hostfile(
      "# DeepSpeed hostfile\n"
      "worker-1 slots=8\n"
      "\n"
      "  worker-2   slots=4   # fewer GPUs\n"
      "n[1-2]\n"
      "worker-1 slots=2\n"
      "gpu7 max_slots=4\r\n");
  ASSERT_TRUE(r.ok()) << r.error().what();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ((*r)[0].name, "worker-1");
  EXPECT_EQ((*r)[0].slots, 8);
  EXPECT_EQ((*r)[1].name, "worker-2");
  EXPECT_EQ((*r)[1].slots, 4);
  EXPECT_EQ((*r)[2].name, "n1");
  EXPECT_EQ((*r)[2].slots, std::nullopt);
  EXPECT_EQ((*r)[3].name, "n2");
  EXPECT_EQ((*r)[4].name, "gpu7");
}

TEST(Hostfile, ErrorsNameTheLine) {
  auto r = parse_hostfile("n1\nn2 extra\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().what(),
            "hostfile line 2: unexpected word 'extra' (expected 'host' or 'host slots=N')");
  r = parse_hostfile("n1 slots=x\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().what(), "hostfile line 1: bad slots value 'x'");
  r = parse_hostfile("n1\n\nn;2\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().what().rfind(
                "hostfile line 3: host list item 'n;2': host name 'n;2' contains ';'", 0),
            0u)
      << r.error().what();
  r = parse_hostfile("# nothing\n\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().what(), "hostfile names no host");
}

}  // namespace
}  // namespace hangscan
