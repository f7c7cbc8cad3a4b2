// The replay's parts (DESIGN §31): reading calls from journal lines,
// masking what two runs make differently, and the replayer — its replies,
// its comparisons, and its pacing across real threads.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "replay/normalise.h"
#include "replay/record.h"
#include "replay/replayer.h"

namespace mates::replay {
namespace {

std::string Line(double ts, const Json& message, std::vector<std::string> delivered = {}) {
  Json j{{"kind", "message"}, {"ts", ts}, {"message", message}};
  if (!delivered.empty()) j["delivered"] = delivered;
  return DumpJson(j) + "\n";
}
std::string User(double ts, const std::string& text, std::vector<std::string> delivered = {}) {
  return Line(ts, Json{{"role", "user"}, {"content", Json::array({{{"type", "text"}, {"text", text}}})}},
              std::move(delivered));
}
std::string Said(double ts, const std::string& text) {
  return Line(ts, Json{{"role", "assistant"}, {"content", Json::array({{{"type", "text"}, {"text", text}}})}});
}
std::string Uses(double ts, const std::string& id, const std::string& tool, const Json& input) {
  return Line(ts, Json{{"role", "assistant"},
                       {"content", Json::array({{{"type", "tool_use"}, {"id", id}, {"name", tool}, {"input", input}}})}});
}
std::string Result(double ts, const std::string& id, const std::string& text) {
  return Line(ts, Json{{"role", "user"},
                       {"content", Json::array({{{"type", "tool_result"}, {"tool_use_id", id}, {"content", text}}})}});
}
std::string Usage(double ts, int in) {
  return DumpJson(Json{{"kind", "usage"}, {"ts", ts}, {"model", "m1"}, {"usage", {{"input_tokens", in}}}}) + "\n";
}
std::string TurnEnd(double ts, const std::string& end, const std::string& in = "") {
  Json j{{"kind", "turn_end"}, {"ts", ts}, {"end", end}, {"why", "it broke"}};
  if (!in.empty()) j["in"] = in;
  return DumpJson(j) + "\n";
}

TEST(RecordTest, CallsTurnsTakesAndStopsComeFromTheLines) {
  const std::string text = User(1, "Go") + Usage(2, 10) + Uses(2, "t1", "read_file", {{"path", "a"}}) +
                           Result(3, "t1", "alpha") + Usage(4, 11) + Said(4, "Read.") +
                           User(5, "<teammate-message>one r-0123456789abcdef</teammate-message>", {"m-1", "m-2"}) +
                           Usage(6, 12) + Said(6, "cut") +
                           User(7, "[Your reply was cut off at the output limit. Continue exactly where it stopped.]") +
                           Said(8, "rest") + User(9, "Task #3: write it") + TurnEnd(10, "failed", "model") +
                           User(11, "why?") + Said(12, "No.") + TurnEnd(12.5, "refusal") + "not json\n" +
                           Result(13, "t9", "orphan") + Said(14, "torn").substr(0, 20);
  std::vector<std::string> notes;
  RecordedAgent a = ReadAgent("w1", {{"t", text}}, false, &notes);
  ASSERT_EQ(a.calls.size(), 6u);
  const auto& c = a.calls;
  EXPECT_EQ(c[0].turn, 1);
  EXPECT_EQ(c[0].take_ts, 1);
  EXPECT_EQ(c[0].reply.stop_reason, "tool_use");
  EXPECT_EQ(c[0].reply.usage.input_tokens, 10);
  EXPECT_EQ(c[0].reply.model, "m1");
  EXPECT_EQ(c[0].effects_ts, 3);
  ASSERT_EQ(c[0].results.size(), 1u);
  EXPECT_EQ(c[0].results[0].text, "alpha");
  EXPECT_EQ(c[1].turn, 1);
  EXPECT_EQ(c[1].take_ts, 3);
  EXPECT_EQ(c[1].reply.stop_reason, "end_turn");
  // A take of two inbox messages; a reply cut at max_tokens goes on in the same turn.
  EXPECT_EQ(c[2].turn, 2);
  EXPECT_EQ(c[2].delivered_total, 2);
  ASSERT_EQ(c[2].taken.size(), 1u);
  EXPECT_EQ(c[2].reply.stop_reason, "max_tokens");
  EXPECT_EQ(c[3].turn, 2);
  EXPECT_EQ(c[3].delivered_total, 2);
  // A failed model call, in a turn that began with a claim.
  EXPECT_TRUE(c[4].failed);
  EXPECT_EQ(c[4].why, "it broke");
  EXPECT_EQ(c[4].claimed_task, 3);
  EXPECT_EQ(c[4].turn, 3);
  EXPECT_EQ(c[5].turn, 4);
  EXPECT_EQ(c[5].reply.stop_reason, "refusal");
  // The orphan result is said; the torn last line and the line that is not JSON carry nothing.
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("t9"), std::string::npos) << notes[0];
}

TEST(RecordTest, ALeadsJournalsAreOneAgentInTheOrderOfTheirTimes) {
  const std::string home = User(1, "Make a team") + Said(2, "making") + DumpJson(Json{{"kind", "moved"}, {"team", "t"}}) +
                           "\n" + DumpJson(Json{{"kind", "moved"}, {"team", "t"}}) + "\n" + Said(9, "back home");
  auto text = [](const std::string& t) { return Json::array({{{"type", "text"}, {"text", t}}}); };
  const Json past = Json::array({{{"role", "user"}, {"content", text("Make a team")}},
                                 {{"role", "assistant"}, {"content", text("making")}}});
  const std::string made = DumpJson(Json{{"kind", "compact"}, {"ts", 3}, {"messages", past},
                                         {"transcript", "/w/.teams/default/agents/lead.jsonl"}}) + "\n" +
                           User(4, "news") + Said(5, "noted");
  RecordedAgent lead = ReadAgent("lead", {{"default", home}, {"t", made}}, false, nullptr);
  ASSERT_EQ(lead.calls.size(), 3u);
  EXPECT_EQ(lead.calls[0].reply.Text(), "making");
  EXPECT_EQ(lead.calls[1].reply.Text(), "noted");
  EXPECT_EQ(lead.calls[2].reply.Text(), "back home");
  EXPECT_EQ(MovedTo(home), std::vector<std::string>{"t"});
  EXPECT_EQ(CameFrom(made), "default");
  EXPECT_EQ(CameFrom(home), "");
  EXPECT_EQ(FirstWords(home), "Make a team");
  EXPECT_EQ(FirstWords(made), "Make a team");
  EXPECT_EQ(FirstTime(made), 3);
  // Without the journal that wrote it, the compact line is the start.
  RecordedAgent alone = ReadAgent("lead", {{"t", made}}, true, nullptr);
  ASSERT_EQ(alone.calls.size(), 2u);
  EXPECT_EQ(alone.calls[0].reply.Text(), "making");
  EXPECT_EQ(ReadAgent("lead", {{"t", made}}, false, nullptr).calls.size(), 1u);
}

TEST(NormaliseTest, WhatTwoRunsMakeDifferentlyIsMasked) {
  const std::vector<std::string> roots = {"/tmp/a", "/tmp/a/b"};
  EXPECT_EQ(Masked("at /tmp/a/b/x and /tmp/a/y", roots), "at <workspace>/x and <workspace>/y");
  EXPECT_EQ(Masked("merged (a65ab490f4 on mates/wt) m-0123456789abcdef", {}), "merged (<hex> on mates/wt) m-<hex>");
  EXPECT_EQ(Masked("archived in .archive/t-20261206T132625 at 2026-12-06T13:26:25.5Z", {}),
            "archived in .archive/t-<stamp> at <time>");
  // Words, numbers and short hex stay: they are what a tool said.
  EXPECT_EQ(Masked("port 8080 is deadbeef, cafe 1234567", {}), "port 8080 is deadbeef, cafe 1234567");
  // A commit with no letter in it (one short hash in a hundred), a clock's seconds.
  EXPECT_EQ(Masked("commit 2806568792 at 1796563585", {}), "commit <hex> at <hex>");
}

TEST(NormaliseTest, IdsAreLearnedFromTextsThatReadTheSame) {
  IdMap ids;
  const std::vector<std::string> none;
  EXPECT_FALSE(ids.Learn("plan r-00000000000000aa", "other r-00000000000000bb", none));
  EXPECT_EQ(ids.size(), 0u);
  EXPECT_TRUE(ids.Learn("plan r-00000000000000aa from m-00000000000000a1", "plan r-00000000000000bb from m-00000000000000b1",
                        none));
  EXPECT_EQ(ids.Apply(R"({"request_id":"r-00000000000000aa","x":"r-00000000000000cc"})"),
            R"({"request_id":"r-00000000000000bb","x":"r-00000000000000cc"})");
  EXPECT_EQ(IdsIn("xr-00000000000000aa r-00000000000000aa m-1"), std::vector<std::string>{"r-00000000000000aa"});
}

// Two agents whose record has A reply first, then B (which took in a
// request id A's message named): B, though it asks first, is answered
// only after A asked, with the replay's id.
TEST(ReplayerTest, AgentsAreAnsweredInTheRecordedOrder) {
  RecordedAgent a{"a", {}};
  a.calls.push_back({});
  a.calls[0].take_ts = 1;
  a.calls[0].reply_ts = 2;
  a.calls[0].reply.content = {llm::ContentBlock::Text("first")};
  a.calls[0].reply.stop_reason = "end_turn";
  RecordedAgent b{"b", {}};
  b.calls.push_back({});
  b.calls[0].take_ts = 3;
  b.calls[0].reply_ts = 4;
  b.calls[0].taken = {"approve r-00000000000000aa?"};
  b.calls[0].reply.content = {llm::ContentBlock::ToolUse("u1", "SendMessage", R"({"request_id":"r-00000000000000aa"})")};
  b.calls[0].reply.stop_reason = "tool_use";
  Replayer r({a, b}, {});
  std::atomic<bool> a_asked{false}, b_asked{false};
  std::thread tb([&] {
    b_asked = true;
    r.BeforeTake("b", [] { return 0; });
    llm::Request req;
    req.agent_id = "b@t";
    req.messages = {{llm::Role::kUser, {llm::ContentBlock::Text("approve r-00000000000000bb?")}}};
    auto reply = r.Complete(req, {}, nullptr);
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply->content[0].input_json, R"({"request_id":"r-00000000000000bb"})");
    // Answered only once A was: A had asked by then.
    EXPECT_TRUE(a_asked.load());
  });
  while (!b_asked) std::this_thread::yield();
  std::thread ta([&] {
    a_asked = true;
    r.BeforeTake("a", [] { return 0; });
    llm::Request req;
    req.agent_id = "a@t";
    req.messages = {{llm::Role::kUser, {llm::ContentBlock::Text("go")}}};
    auto reply = r.Complete(req, {}, nullptr);
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply->Text(), "first");
  });
  ta.join();
  tb.join();
  r.Finish();
  for (const auto& o : r.Outcomes()) EXPECT_FALSE(o.divergence) << o.name << ": " << o.divergence->what;
}

TEST(ReplayerTest, TheFirstDifferenceIsTheDivergenceAndACallPastTheRecordIsOne) {
  RecordedAgent a{"a", {}};
  a.calls.resize(2);
  a.calls[0].reply_ts = 1;
  a.calls[0].reply.content = {llm::ContentBlock::ToolUse("u1", "read_file", R"({"path":"x"})")};
  a.calls[0].reply.stop_reason = "tool_use";
  a.calls[0].effects_ts = 2;
  a.calls[0].results = {llm::ContentBlock::ToolResult("u1", "port: 8080", false)};
  a.calls[1].turn = 1;
  a.calls[1].reply_ts = 3;
  a.calls[1].reply.content = {llm::ContentBlock::Text("ok")};
  a.calls[1].reply.stop_reason = "end_turn";
  Replayer r({a}, {});
  llm::Request req;
  req.agent_id = "a@t";
  req.messages = {{llm::Role::kUser, {llm::ContentBlock::Text("go")}}};
  ASSERT_TRUE(r.Complete(req, {}, nullptr).ok());
  req.messages.push_back({llm::Role::kAssistant, {a.calls[0].reply.content}});
  req.messages.push_back({llm::Role::kUser, {llm::ContentBlock::ToolResult("u1", "port: 80", false)}});
  ASSERT_TRUE(r.Complete(req, {}, nullptr).ok());
  auto past = r.Complete(req, {}, nullptr);  // the record has no third
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(past->stop_reason, "end_turn");
  llm::Request stranger;
  stranger.agent_id = "z@t";
  EXPECT_TRUE(r.Complete(stranger, {}, nullptr).ok());
  r.Finish();
  auto out = r.Outcomes();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].divergence);
  EXPECT_EQ(out[0].divergence->call, 1);
  EXPECT_EQ(out[0].divergence->tool, "read_file");
  EXPECT_EQ(out[0].divergence->recorded, "port: 8080");
  EXPECT_EQ(out[0].divergence->replayed, "port: 80");
  EXPECT_EQ(out[0].replayed_calls, 2);
  ASSERT_EQ(r.notes().size(), 1u);
  EXPECT_NE(r.notes()[0].find("z called the model and is not in the record"), std::string::npos);
}

// A take that waits for a message that never comes: nudged once, then
// pacing stops and the agent's divergence says so; nothing waits forever.
TEST(ReplayerTest, AReplayInWhichNothingMovesStopsPacing) {
  RecordedAgent a{"a", {}};
  a.calls.resize(1);
  a.calls[0].take_ts = 1;
  a.calls[0].reply_ts = 2;
  a.calls[0].delivered_total = 1;
  a.calls[0].reply.content = {llm::ContentBlock::Text("thanks")};
  a.calls[0].reply.stop_reason = "end_turn";
  ReplayerOptions o;
  o.nudge_after_s = 0.01;
  o.give_up_s = 0.3;
  Replayer r({a}, o);
  std::atomic<int> nudges{0};
  r.SetNudge("a", &nudges, [&](const std::string& note) {
    EXPECT_FALSE(note.empty());
    ++nudges;
  });
  r.BeforeTake("a", [] { return 0; });  // returns once pacing stops
  EXPECT_EQ(nudges.load(), 0);          // it was waiting here: no nudge
  r.Finish();
  auto out = r.Outcomes();
  ASSERT_TRUE(out[0].divergence);
  EXPECT_NE(out[0].divergence->what.find("stalled"), std::string::npos) << out[0].divergence->what;
  EXPECT_EQ(out[0].replayed_calls, 0);
}

}  // namespace
}  // namespace mates::replay
