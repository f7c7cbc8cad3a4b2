#include "core/ids.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <thread>
#include <vector>

namespace mates {
namespace {

TEST(IdsTest, PrefixedIdsAreUniqueAcrossThreads) {
  std::vector<std::vector<std::string>> per(4);
  std::vector<std::thread> threads;
  for (auto& v : per) {
    threads.emplace_back([&v] {
      for (int i = 0; i < 5000; ++i) v.push_back(NewId("m"));
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (auto& v : per) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), 20000u);
  EXPECT_TRUE(std::regex_match(*all.begin(), std::regex("m-[0-9a-f]{16}")));
}

TEST(IdsTest, UuidIsVersion4) {
  std::regex re("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(std::regex_match(NewUuid(), re));
}

}  // namespace
}  // namespace mates
