// A test suite with a private PostgreSQL server (support/pg_server.h): one
// per test program, started before its first test and stopped after its
// last; `server_` for the tests.
#pragma once

#include <gtest/gtest.h>

#include "support/pg_server.h"

namespace mates::testing {

class PgSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = PgServer::Start();
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = s->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static inline PgServer* server_ = nullptr;
};

}  // namespace mates::testing
