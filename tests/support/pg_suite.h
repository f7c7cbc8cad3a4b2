// A test suite with a private PostgreSQL server (support/pg_server.h): one
// per test program, started before its first test and stopped after its
// last; `server_` for the tests.
#pragma once

#include <gtest/gtest.h>

#include "pg/connection.h"
#include "pg/schema.h"
#include "pg/store.h"
#include "store/team_store.h"
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

// With a database of its own for each test (named `prefix` and a number),
// the schema in it, and a store and its teams on it.
class PgTeamsSuite : public PgSuite {
 protected:
  void OpenDatabase(const std::string& prefix) {
    static int n = 0;
    auto url = server_->CreateDatabase(prefix + std::to_string(++n));
    ASSERT_TRUE(url.ok()) << url.status().message();
    url_ = *url;
    auto target = pg::ParseTarget(url_);
    ASSERT_TRUE(target.ok());
    auto c = pg::Connection::Open(*target, 10);
    ASSERT_TRUE(c.ok()) << c.status().message();
    ASSERT_TRUE(pg::InitSchema(*c).ok());
    auto store = pg::Store::Open(*target);
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    teams_ = pg::StoreTeams(*store_);
  }

  std::string url_;
  std::unique_ptr<pg::Store> store_;
  std::unique_ptr<TeamStore> teams_;
};

}  // namespace mates::testing
