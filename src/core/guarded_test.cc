#include "core/guarded.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <string>
#include <thread>

namespace mates {
namespace {

// What `ps -L` and `top -H` show: the name, or its first 15 bytes, never
// half a character.
TEST(GuardedTest, AThreadIsNamedAndALongNameIsCutWhole) {
  auto named = [](const std::string& name) {
    std::string shown;
    std::thread t([&] {
      NameThisThread(name);
      char buf[64] = {};
      EXPECT_EQ(pthread_getname_np(pthread_self(), buf, sizeof buf), 0);
      shown = buf;
    });
    t.join();
    return shown;
  };
  EXPECT_EQ(named("alice"), "alice");
  EXPECT_EQ(named("mates-activity"), "mates-activity");
  EXPECT_EQ(named("a-teammate-with-a-long-name"), "a-teammate-with");
  // "ü" is two bytes, the 15th and 16th of this name: cut before it.
  EXPECT_EQ(named("abcdefghijklmn\xC3\xBCx"), "abcdefghijklmn");
  EXPECT_EQ(named(""), "");
}

// An exception in a thread's body is said and ends the body, not the process.
TEST(GuardedTest, AnExceptionEndsTheBodyNotTheProcess) {
  bool after = false;
  std::thread t([&] {
    RunGuarded("a test thread", [] { throw std::runtime_error("boom"); });
    after = true;
  });
  t.join();
  EXPECT_TRUE(after);
}

}  // namespace
}  // namespace mates
