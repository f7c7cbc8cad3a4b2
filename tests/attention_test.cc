// What goes wrong, in plain sight (DESIGN §20), end to end: a hosted team
// whose model server (a real `mates mock-llm` over HTTP) goes away shows
// `retrying`, then `error` with the reason, in `status` and its JSON, with
// an attention item whose hint works as printed; the server back and a
// message later, the state clears. A task whose owner is gone is an
// `orphaned_task` item whose hint, pasted, releases it.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/json.h"
#include "core/shell_words.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::TempDir;

const char kQuiet[] = R"({"default_reply": [{"type": "text", "text": "Noted."}]})";

using testing::ModelServer;

class AttentionTest : public ::testing::Test {
 protected:
  ~AttentionTest() override { Mates({"down", "--team", "att", "--timeout", "5"}); }
  testing::CommandResult Mates(const std::vector<std::string>& args) {
    return testing::RunMates(ws_.path(), args, {"ANTHROPIC_API_KEY=sk-test-not-a-real-key"});
  }
  Json Status() {
    auto r = Mates({"status", "--team", "att", "--json"});
    auto j = ParseJson(r.out);
    return j.ok() ? *j : Json::object();
  }
  static Json Member(const Json& status, const std::string& name) {
    for (const auto& m : status.value("members", Json::array())) {
      if (m.value("name", "") == name) return m;
    }
    return Json::object();
  }
  static Json Item(const Json& status, const std::string& kind) {
    for (const auto& i : status.value("attention", Json::array())) {
      if (i.value("kind", "") == kind) return i;
    }
    return Json::object();
  }
  // A hint as printed, run: "mates …" split as a shell would.
  testing::CommandResult RunHint(const std::string& hint) {
    auto words = SplitShellWords(hint);
    EXPECT_TRUE(words.ok()) << hint;
    if (!words.ok() || words->empty() || (*words)[0] != "mates") return {};
    return Mates(std::vector<std::string>(words->begin() + 1, words->end()));
  }

  TempDir ws_;
};

TEST_F(AttentionTest, AModelServerGoneShowsRetryingThenErrorUntilATurnSucceeds) {
  testing::WriteAll(ws_.path() / "quiet.json", kQuiet);
  ModelServer server(ws_.path() / "quiet.json");
  auto up = Mates({"up", "--team", "att", "--provider", "anthropic", "--base-url", server.url(), "--no-dashboard",
                   "--sandbox", "off", "Say hello"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  ASSERT_TRUE(testing::WaitUntil([&] { return Member(Status(), "lead").value("state", "") == "idle"; }, 30))
      << Status().dump(2);

  server.Stop();
  const double sent = WallSeconds();
  ASSERT_EQ(Mates({"send", "--team", "att", "--to", "lead", "Are you there?"}).exit_code, 0);
  // Within about a second of the first failed attempt: retrying, said.
  // What is checked is the snapshot that showed it, timed by the host's
  // own clock: a status process under a sanitizer on a busy machine takes
  // a second of its own, and the next attempt may have come meanwhile.
  Json s;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        s = Status();
        return Member(s, "lead").value("state", "") == "retrying";
      },
      10))
      << s.dump(2);
  const Json activity = Member(s, "lead")["activity"];
  const int attempt = activity["retry"].value("attempt", 0);
  EXPECT_GE(attempt, 2) << activity.dump();
  EXPECT_LE(attempt, 5) << activity.dump();
  if (attempt == 2) {
    ASSERT_TRUE(activity.contains("since")) << activity.dump();
    EXPECT_GE(activity.value("since", 0.0), sent - 1) << activity.dump();
    EXPECT_LT(activity.value("since", 0.0) - sent, 3.0) << activity.dump();
  }
  const std::string doing = Member(s, "lead").value("doing", "");
  EXPECT_NE(doing.find("(attempt " + std::to_string(attempt) + " of 5)"), std::string::npos) << doing;
  EXPECT_EQ(Item(s, "retrying").value("hint", ""), "mates status --team att --watch") << s.dump(2);
  auto text = Mates({"status", "--team", "att"});
  EXPECT_EQ(text.out.rfind("NEEDS ATTENTION", 0), 0u) << text.out;

  // After the last attempt: error, with the reason and what comes next.
  ASSERT_TRUE(testing::WaitUntil([&] { return Member(Status(), "lead").value("state", "") == "error"; }, 40))
      << Status().dump(2);
  s = Status();
  const Json error = Member(s, "lead")["activity"]["error"];
  EXPECT_NE(error.value("reason", "").find("gave up after 5 attempts"), std::string::npos) << error.dump();
  EXPECT_NE(error.value("next", "").find("next message"), std::string::npos) << error.dump();
  const Json failed = Item(s, "turn_failed");
  EXPECT_EQ(failed.value("hint", ""), "mates send --team att --to lead \"Go on.\"") << s.dump(2);
  EXPECT_EQ(failed.value("link", ""), "agent/lead");
  text = Mates({"status", "--team", "att"});
  EXPECT_NE(text.out.find("error"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("waiting for work"), std::string::npos) << "shown green while the model is gone:\n"
                                                                   << text.out;

  // The server back, the hint as printed: the turn succeeds, the state clears.
  server.Start(server.port());
  ASSERT_EQ(RunHint(failed.value("hint", "")).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        Json now = Status();
        return Member(now, "lead").value("state", "") == "idle" && Item(now, "turn_failed").empty();
      },
      30))
      << Status().dump(2);
}

TEST_F(AttentionTest, AnOrphanedTaskIsNamedAndItsHintReleasesIt) {
  ASSERT_EQ(Mates({"up", "--team", "att", "--provider", "scripted", "--scenario",
                   testing::ScenarioFixture("team_hosted.yaml"), "--no-dashboard"})
                .exit_code,
            0);
  ASSERT_EQ(Mates({"tasks", "--team", "att", "create", "Write the docs"}).exit_code, 0);
  // Claimed by a member that is gone (stopped: its roster entry says so).
  ASSERT_EQ(Mates({"tasks", "--team", "att", "update", "1", "--owner", "ghost", "--status", "in_progress"}).exit_code,
            0);
  Json item = Item(Status(), "orphaned_task");
  ASSERT_FALSE(item.empty()) << Status().dump(2);
  EXPECT_NE(item.value("subject", "").find("task #1 \"Write the docs\""), std::string::npos) << item.dump();
  EXPECT_EQ(item.value("link", ""), "task/1");
  auto released = RunHint(item.value("hint", ""));
  ASSERT_EQ(released.exit_code, 0) << item.dump() << released.err;
  auto task = Mates({"tasks", "--team", "att", "get", "1", "--json"});
  auto j = ParseJson(task.out);
  ASSERT_TRUE(j.ok()) << task.out;
  EXPECT_EQ((*j).value("status", ""), "pending");
  EXPECT_EQ((*j).value("owner", "x"), "");
  EXPECT_TRUE(Item(Status(), "orphaned_task").empty());
}

}  // namespace
}  // namespace mates
