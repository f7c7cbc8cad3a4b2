// Claude Code's team files read and written without Claude Code: the
// scrubbed files of a real run (tests/fixtures/claude_team/, written by
// tests/browser/claude_team.mjs --fixtures), and files made here to be
// what a reader meets at its worst: unknown fields, a file caught
// mid-write, one that stays broken, a lock Claude Code holds or left.
#include "claude/claude_team.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "agent/prices.h"
#include "core/clock.h"
#include "stores/open_store.h"
#include "support/test_env.h"
#include "support/test_util.h"
#include "view/attention.h"
#include "view/team_view.h"

namespace mates::claude {
namespace {

constexpr const char* kTeam = "session-5e55e55e";

// The fixture's home copied where a test may change it.
fs::path CopyFixture(const testing::TempDir& dir) {
  const fs::path from = fs::path(MATES_SOURCE_DIR) / "tests/fixtures/claude_team";
  const fs::path to = dir.path() / "home";
  fs::copy(from, to, fs::copy_options::recursive);
  return to;
}

Json ReadJson(const fs::path& f) {
  auto j = ParseJson(testing::ReadAll(f));
  EXPECT_TRUE(j.ok()) << f;
  return j.ok() ? *j : Json();
}

void WriteJson(const fs::path& f, const Json& j) {
  fs::create_directories(f.parent_path());
  testing::WriteAll(f, j.dump(2));
}

const Message* Find(const std::vector<Message>& ms, const std::string& from, const std::string& to,
                    const std::string& text) {
  for (const auto& m : ms) {
    if (m.from == from && m.to == to && m.text.find(text) != std::string::npos) return &m;
  }
  return nullptr;
}

// The model calls of a transcript as Claude Code counts them: its
// assistant lines, one per message id.
std::set<std::string> CallsIn(const fs::path& transcript) {
  std::set<std::string> ids;
  std::ifstream in(transcript);
  for (std::string line; std::getline(in, line);) {
    auto j = ParseJson(line);
    if (j.ok() && j->value("type", "") == "assistant") ids.insert((*j)["message"].value("id", ""));
  }
  return ids;
}

TEST(ClaudeTeamTest, ReadsWhatARealRunWrote) {
  testing::TempDir dir;
  ClaudeHome home(CopyFixture(dir));
  auto teams = home.ListTeams();
  ASSERT_TRUE(teams.ok());
  ASSERT_EQ(*teams, std::vector<std::string>{kTeam});
  auto s = home.Look(kTeam);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->problems.empty()) << s->problems.front();
  EXPECT_EQ(s->config.lead(), "team-lead");
  ASSERT_EQ(s->config.members.size(), 3u);
  EXPECT_EQ(s->config.members[1].name, "alpha");
  EXPECT_EQ(s->config.members[1].prompt, "You are alpha, a coder. Take task 1.");
  EXPECT_EQ(s->config.members[2].color, "green");
  // Fields mates does not read are kept, as written.
  EXPECT_TRUE(s->config.members[0].extra.contains("tmuxPaneId")) << s->config.members[0].extra;
  // The board: #1 alpha's, in progress; #3 made with mates.
  ASSERT_EQ(s->tasks.size(), 3u);
  EXPECT_EQ(s->tasks[0].status, "in_progress");
  EXPECT_EQ(s->tasks[0].owner, "alpha");
  EXPECT_EQ(s->tasks[2].subject, "Review from mates");
  // The mail: delivered (read) from the transcripts, waiting from the inbox.
  const Message* hello = Find(s->messages, "beta", "alpha", "Send me code");
  ASSERT_NE(hello, nullptr);
  EXPECT_TRUE(hello->read);
  EXPECT_EQ(hello->summary, "hello from beta");
  EXPECT_NE(Find(s->messages, "alpha", "beta", "Here is the parser"), nullptr);
  EXPECT_NE(Find(s->messages, "team-lead", "alpha", "You are alpha"), nullptr);
  EXPECT_NE(Find(s->messages, "user", "team-lead", "please start the team"), nullptr);
  EXPECT_NE(Find(s->messages, "user", "beta", "Please look at the board, from mates"), nullptr);
  const Message* waiting = Find(s->messages, "alpha", "beta", "Tests are next");
  ASSERT_NE(waiting, nullptr);
  EXPECT_FALSE(waiting->read);
  EXPECT_EQ(waiting->extra["shiny"]["new"], "field");  // unknown: kept
  EXPECT_EQ(s->unread["beta"], 1u);
  bool idle = false;
  for (const auto& m : s->messages) idle = idle || (m.protocol == "idle_notification" && m.to == "team-lead");
  EXPECT_TRUE(idle);
  EXPECT_TRUE(std::is_sorted(s->messages.begin(), s->messages.end(),
                             [](const Message& a, const Message& b) { return a.timestamp < b.timestamp; }));
  std::set<std::string> ids;
  for (const auto& m : s->messages) EXPECT_TRUE(ids.insert(m.id).second) << m.id;
  // Each member's calls, once each, and tokens.
  for (const auto& name : {"team-lead", "alpha", "beta"}) {
    ASSERT_EQ(s->activity.count(name), 1u) << name;
    const Activity& a = s->activity[name];
    EXPECT_EQ(static_cast<size_t>(a.calls), CallsIn(a.transcript).size()) << name;
    EXPECT_GT(a.tokens.input_tokens + a.tokens.cache_creation_input_tokens + a.tokens.cache_read_input_tokens, 0) << name;
    EXPECT_EQ(a.model, "claude-opus-4-8");
    EXPECT_TRUE(agent::PriceTable::Builtin().Cost(a.model, a.tokens).has_value());
  }
  EXPECT_FALSE(s->lead_alive);  // no Claude Code runs it here
  // The same ids on a second look (the page keeps messages by id).
  auto again = home.Look(kTeam);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->messages.size(), s->messages.size());
  for (size_t i = 0; i < s->messages.size(); ++i) EXPECT_EQ(again->messages[i].id, s->messages[i].id);
}

// The team as a store: `mates status`'s view, with what needs a person.
TEST(ClaudeTeamTest, AsAStoreItIsATeamView) {
  testing::TempDir dir;
  const fs::path h = CopyFixture(dir);
  // Its lead's Claude Code "runs": this process, as Claude Code registers itself.
  WriteJson(h / "sessions" / (std::to_string(::getpid()) + ".json"),
            {{"pid", ::getpid()}, {"sessionId", ReadJson(h / "teams" / kTeam / "config.json")["leadSessionId"]}});
  // A task whose owner left, and a shutdown request alpha never answered.
  WriteJson(h / "tasks" / kTeam / "9.json", {{"id", "9"}, {"subject", "Left behind"}, {"description", ""},
                                             {"status", "in_progress"}, {"owner", "gamma"}, {"blocks", Json::array()},
                                             {"blockedBy", Json::array()}, {"newField", 42}});
  Json ask = {{"type", "shutdown_request"}, {"requestId", "shutdown-1@alpha"}, {"from", "team-lead"},
              {"reason", "done"}, {"timestamp", "2026-11-29T01:00:00.000Z"}};
  WriteJson(h / "teams" / kTeam / "inboxes/alpha.json",
            Json::array({{{"from", "team-lead"}, {"text", ask.dump()}, {"timestamp", "2026-11-29T01:00:00.000Z"},
                          {"read", false}}}));
  auto store = OpenTeamStore("claude:" + h.string(), Workspace(dir.path()), testing::TestEnv());
  ASSERT_TRUE(store.ok()) << store.status().message();
  EXPECT_EQ((*store)->foreign(), "Claude Code");
  auto v = view::LookAtTeam(**store, kTeam, 100);
  ASSERT_TRUE(v.ok()) << v.status().message();
  Json j = view::TeamViewToJson(*v);
  EXPECT_EQ(j["foreign"], "Claude Code");
  EXPECT_EQ(j["lead"], "team-lead");
  ASSERT_EQ(j["members"].size(), 3u);
  for (const auto& m : j["members"]) {
    EXPECT_NE(m["status"], "offline") << m;
    EXPECT_GT(m["activity"]["calls"].get<int>(), 0) << m;
    EXPECT_TRUE(m["activity"]["cost_usd"].is_number()) << m;
  }
  EXPECT_EQ(j["members"][2]["unread"], 1);
  EXPECT_EQ(j["board"]["in_progress"], 2);
  // The task's unknown field, shown raw.
  bool raw = false;
  for (const auto& t : v->tasks) raw = raw || t.metadata_json.find("\"newField\":42") != std::string::npos;
  EXPECT_TRUE(raw);
  std::set<std::string> kinds;
  for (const auto& a : j["attention"]) kinds.insert(a["kind"].get<std::string>());
  EXPECT_EQ(kinds.count("unread_while_idle"), 1u) << j["attention"];
  EXPECT_EQ(kinds.count("orphaned_task"), 1u) << j["attention"];
  EXPECT_EQ(kinds.count("request_unanswered"), 1u) << j["attention"];
  for (const auto& a : j["attention"]) {
    if (a["kind"] == "orphaned_task") {
      EXPECT_EQ(a["hint"], "") << "mates cannot reassign Claude Code's task";
    }
  }
  // The shutdown request is a request, pending.
  auto requests = (*store)->Mail(kTeam)->ListRequests();
  ASSERT_TRUE(requests.ok());
  ASSERT_EQ(requests->size(), 1u);
  EXPECT_EQ((*requests)[0].requester, "team-lead");
  EXPECT_EQ((*requests)[0].responder, "alpha");
  EXPECT_EQ((*requests)[0].status, RequestState::kPending);
  // A member's journal is its transcript, as mates' journal lines.
  auto journal = (*store)->ReadJournal(kTeam, "beta", 64 << 20);
  ASSERT_TRUE(journal.ok());
  EXPECT_NE(journal->text.find("\"kind\":\"message\""), std::string::npos);
  EXPECT_NE(journal->text.find("\"kind\":\"usage\""), std::string::npos);
  // The rest is Claude Code's.
  EXPECT_EQ((*store)->DeleteTeam(kTeam).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*store)->Board(kTeam)->Claim(1, "beta").status().code(), StatusCode::kFailedPrecondition);
  // Gone: the lead's Claude Code ended.
  fs::remove_all(h / "sessions");
  auto ended = view::LookAtTeam(**store, kTeam, 100);
  ASSERT_TRUE(ended.ok());
  for (const auto& m : ended->members) EXPECT_EQ(m.shown, Shown::kOffline) << m.member.name;
}

// The log a page at a time: what follows a cursor is what is new since,
// and a message read since (the page replaces it by its id).
TEST(ClaudeTeamTest, TheLogGivesWhatIsNewAndWhatWasReadSince) {
  testing::TempDir dir;
  const fs::path h = CopyFixture(dir);
  auto store = OpenTeamStore("claude:" + h.string(), Workspace(dir.path()), testing::TestEnv());
  ASSERT_TRUE(store.ok());
  auto first = (*store)->TailLog(kTeam, 1000, 0);
  ASSERT_TRUE(first.ok());
  ASSERT_FALSE(first->messages.empty());
  auto none = (*store)->LogAfter(kTeam, first->next, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->messages.empty());
  auto all = (*store)->LogAfter(kTeam, 0, 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->messages.size(), first->messages.size());
  const mates::Message* unread = nullptr;
  for (const auto& m : first->messages) {
    if (m.content == "Tests are next, beta.") unread = &m;
  }
  ASSERT_NE(unread, nullptr);
  EXPECT_FALSE(*unread->read);
  const LogPage* after = &*none;
  // Delivered: gone from the inbox, in beta's transcript.
  const Json inbox = ReadJson(h / "teams" / kTeam / "inboxes/beta.json");
  WriteJson(h / "teams" / kTeam / "inboxes/beta.json", Json::array());
  fs::path transcript;
  for (const auto& e : fs::recursive_directory_iterator(h / "projects")) {
    if (e.path().filename().string().find("agent-abeta") == 0 && e.path().extension() == ".jsonl") transcript = e.path();
  }
  ASSERT_FALSE(transcript.empty());
  std::ofstream(transcript, std::ios::app)
      << Json{{"type", "user"},
              {"timestamp", "2026-11-29T01:00:01.000Z"},
              {"message", {{"role", "user"},
                           {"content", "<teammate-message teammate_id=\"alpha\" color=\"blue\" summary=\"tests next\">\n" +
                                           inbox[0]["text"].get<std::string>() + "\n</teammate-message>"}}}}
             .dump()
      << "\n";
  auto read = (*store)->LogAfter(kTeam, after->next, 0);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->messages.size(), 1u);
  EXPECT_EQ(read->messages[0].id, unread->id) << "the same message, now read";
  EXPECT_TRUE(*read->messages[0].read);
  auto nothing = (*store)->LogAfter(kTeam, read->next, 0);
  ASSERT_TRUE(nothing.ok());
  EXPECT_TRUE(nothing->messages.empty());
  // A new one, sent now: next, unread.
  ASSERT_TRUE((*store)->Mail(kTeam)->Deliver("alpha", [] {
    mates::Message m;
    m.sender = "user";
    m.content = "One more";
    return m;
  }()).ok());
  auto fresh = (*store)->LogAfter(kTeam, read->next, 0);
  ASSERT_TRUE(fresh.ok());
  ASSERT_EQ(fresh->messages.size(), 1u);
  EXPECT_EQ(fresh->messages[0].content, "One more");
  EXPECT_FALSE(*fresh->messages[0].read);
}

TEST(ClaudeTeamTest, ATranscriptIsFollowedAsItGrows) {
  testing::TempDir dir;
  const fs::path h = dir.path() / "home";
  WriteJson(h / "teams/t/config.json",
            {{"name", "t"}, {"leadAgentId", "team-lead@t"}, {"leadSessionId", "abc"},
             {"members", Json::array({{{"agentId", "team-lead@t"}, {"name", "team-lead"}}})}});
  const fs::path t = h / "projects/-p/abc.jsonl";
  fs::create_directories(t.parent_path());
  auto call = [](const std::string& id, int out, const std::string& block) {
    return Json{{"type", "assistant"},
                {"timestamp", "2026-11-29T01:00:00.000Z"},
                {"message", {{"id", id}, {"model", "claude-sonnet-4-5"}, {"stop_reason", "tool_use"},
                             {"content", Json::array({ParseJson(block).value()})},
                             {"usage", {{"input_tokens", 100}, {"output_tokens", out}}}}}}
        .dump();
  };
  std::ofstream(t) << call("m1", 5, R"({"type":"text","text":"hi"})") << "\n"
                   << call("m1", 7, R"({"type":"tool_use","name":"Bash","input":{"command":"make test"}})") << "\n"
                   << "{not json}\n";
  ClaudeHome home(h);
  auto s = home.Look("t");
  ASSERT_TRUE(s.ok());
  Activity a = s->activity["team-lead"];
  EXPECT_EQ(a.calls, 1) << "two lines of one call";
  EXPECT_EQ(a.tokens.input_tokens, 100);
  EXPECT_EQ(a.tokens.output_tokens, 7) << "the call's last usage";
  EXPECT_EQ(a.state, "tool");
  EXPECT_EQ(a.doing, "Bash(make test)");
  // A line being written is read once it is whole.
  std::string next = call("m2", 3, R"({"type":"text","text":"done"})");
  std::ofstream(t, std::ios::app) << next.substr(0, 20);
  s = home.Look("t");
  EXPECT_EQ(s->activity["team-lead"].calls, 1);
  std::ofstream(t, std::ios::app) << next.substr(20) << "\n";
  s = home.Look("t");
  a = s->activity["team-lead"];
  EXPECT_EQ(a.calls, 2);
  EXPECT_EQ(a.tokens.input_tokens, 200);
  EXPECT_EQ(a.tokens.output_tokens, 10);
  // Replaced (a compaction writes anew): read from the start.
  fs::remove(t);
  std::ofstream(t) << call("m9", 1, R"({"type":"text","text":"x"})") << "\n";
  s = home.Look("t");
  EXPECT_EQ(s->activity["team-lead"].calls, 1);
  EXPECT_EQ(s->activity["team-lead"].tokens.output_tokens, 1);
}

TEST(ClaudeTeamTest, AFileCaughtMidWriteIsReadAgainAndOneThatStaysBrokenIsSaid) {
  testing::TempDir dir;
  const fs::path h = CopyFixture(dir);
  ClaudeHome home(h);
  const fs::path task = h / "tasks" / kTeam / "2.json";
  const std::string whole = testing::ReadAll(task);
  // Claude Code writes a task in place: a reader may see its first half.
  // The rest comes once the reader has read that half (its first close of
  // the file, told by inotify), while it tries again.
  testing::WriteAll(task, whole.substr(0, whole.size() / 2));
  const int in = ::inotify_init1(IN_CLOEXEC);
  ASSERT_GE(in, 0);
  ASSERT_GE(::inotify_add_watch(in, task.c_str(), IN_CLOSE_NOWRITE), 0);
  std::thread writer([&] {
    alignas(struct inotify_event) char buf[4096];
    if (::read(in, buf, sizeof buf) > 0) testing::WriteAll(task, whole);
  });
  auto tasks = home.Tasks(kTeam);
  writer.join();
  ::close(in);
  ASSERT_TRUE(tasks.ok()) << tasks.status().message();
  EXPECT_EQ((*tasks)[1].subject, "Test the parser");
  // One that stays broken: an error naming it, and a look that goes on.
  testing::WriteAll(task, "{\"id\": \"2\", ");
  tasks = home.Tasks(kTeam);
  ASSERT_FALSE(tasks.ok());
  EXPECT_EQ(tasks.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(tasks.status().message().find("2.json"), std::string::npos);
  testing::WriteAll(h / "teams" / kTeam / "inboxes/alpha.json", "[{\"from\":");
  auto s = home.Look(kTeam);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->problems.size(), 2u);
  EXPECT_EQ(s->config.members.size(), 3u);
  // Nor does a config that is not Claude Code's crash anything.
  for (const char* bad : {"[]", "null", "{\"members\": 7}", "{\"members\": [1, {\"name\": 2}, {}]}"}) {
    testing::WriteAll(h / "teams" / kTeam / "config.json", bad);
    auto c = home.LoadTeam(kTeam);
    if (c.ok()) {
      EXPECT_TRUE(c->members.empty()) << bad;
    }
  }
  EXPECT_EQ(home.LoadTeam("nobody").status().code(), StatusCode::kNotFound);
}

// What another program could leave in Claude Code's folders: too big, too
// deep, cut short, NULs, counts that would overflow. Refused with the
// file named, or passed over; never a crash, never a wrong sum.
TEST(ClaudeTeamTest, HostileFilesAreRefusedOrPassedOver) {
  testing::TempDir dir;
  const fs::path h = CopyFixture(dir);
  ClaudeHome home(h);
  const fs::path team = h / "teams" / kTeam;
  // An inbox over its bound (16 MiB): an error naming it, the rest read.
  testing::WriteAll(team / "inboxes/alpha.json", "[" + std::string(17 << 20, ' ') + "]");
  auto inbox = home.Inbox(kTeam, "alpha");
  EXPECT_EQ(inbox.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(inbox.status().message().find("alpha.json"), std::string::npos);
  // Nested past the JSON bound, NULs, cut short.
  testing::WriteAll(h / "tasks" / kTeam / "7.json", std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_FALSE(home.Tasks(kTeam).ok());
  fs::remove(h / "tasks" / kTeam / "7.json");
  testing::WriteAll(h / "tasks" / kTeam / "8.json", std::string(64, '\0'));
  EXPECT_EQ(home.Tasks(kTeam).status().code(), StatusCode::kCorrupt);
  fs::remove(h / "tasks" / kTeam / "8.json");
  auto s = home.Look(kTeam);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->problems.size(), 1u);  // the inbox
  EXPECT_EQ(s->tasks.size(), 3u);
  // A send into that inbox is refused, the file left as it was.
  EXPECT_FALSE(home.Send(kTeam, "user", "alpha", "hi", "").ok());
  EXPECT_EQ(fs::file_size(team / "inboxes/alpha.json"), (17u << 20) + 2);
  // A transcript with NULs, junk, a cut line and counts near 2^63: the
  // junk passed over, the sum held at its largest, not wrapped negative.
  auto big = [](const std::string& id) {
    return Json{{"type", "assistant"},
                {"message", {{"id", id}, {"model", "claude-opus-4-8"}, {"content", Json::array()},
                             {"usage", {{"input_tokens", INT64_MAX - 5}, {"output_tokens", INT64_MAX / 2}}}}}}
        .dump();
  };
  const std::string text = std::string(100, '\0') + "\n{\"type\":\n" + big("a") + "\n" + big("b") + "\n" +
                           big("c") + "\n[[[[[[\n{\"type\":\"assistant\",\"message\":null}\n" + big("d");
  TranscriptSummary t = SummarizeTranscript(text, "beta");
  EXPECT_EQ(t.activity.calls, 3) << "the cut last line waits";
  EXPECT_EQ(t.activity.tokens.input_tokens, INT64_MAX);
  EXPECT_EQ(t.activity.tokens.output_tokens, INT64_MAX);
  EXPECT_TRUE(t.delivered.empty());
}

TEST(ClaudeTeamTest, ASendIsWrittenAsClaudeCodeWritesOne) {
  testing::TempDir dir;
  const fs::path h = CopyFixture(dir);
  ClaudeHome home(h);
  const fs::path inbox = h / "teams" / kTeam / "inboxes/beta.json";
  const Json before = ReadJson(inbox);
  auto id = home.Send(kTeam, "user", "beta", "Run the tests, please.", "tests");
  ASSERT_TRUE(id.ok()) << id.status().message();
  Json after = ReadJson(inbox);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0], before[0]) << "what was there is kept as it was";
  const Json& m = after[1];
  EXPECT_EQ(m["from"], "user");
  EXPECT_EQ(m["text"], "Run the tests, please.");
  EXPECT_EQ(m["summary"], "tests");
  EXPECT_EQ(m["msg_id"], *id);
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["read"], false);
  EXPECT_EQ(m["msgV"], 1);
  auto at = ParseIsoTime(m["timestamp"].get<std::string>());
  ASSERT_TRUE(at.has_value());
  EXPECT_NEAR(*at, WallSeconds(), 60);
  EXPECT_EQ(m["timestamp"].get<std::string>().back(), 'Z');
  EXPECT_FALSE(fs::exists(inbox.string() + ".lock")) << "the lock is let go";
  // An inbox not there yet is made.
  ASSERT_TRUE(home.Send(kTeam, "user", "alpha", "hi", "").ok());
  EXPECT_EQ(ReadJson(h / "teams" / kTeam / "inboxes/alpha.json").size(), 1u);
  // Bad input: one clear error each, nothing written.
  auto nobody = home.Send(kTeam, "user", "gamma", "hi", "");
  EXPECT_EQ(nobody.status().code(), StatusCode::kNotFound);
  EXPECT_NE(nobody.status().message().find("team-lead, alpha, beta"), std::string::npos);
  EXPECT_EQ(home.Send(kTeam, "user", "beta", "", "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(home.Send(kTeam, "user", "beta", std::string(300 << 10, 'x'), "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(home.Send("nobody", "user", "beta", "hi", "").status().code(), StatusCode::kNotFound);
  testing::WriteAll(inbox, "{\"not\": \"an array\"}");
  EXPECT_EQ(home.Send(kTeam, "user", "beta", "hi", "").status().code(), StatusCode::kCorrupt);
  EXPECT_EQ(testing::ReadAll(inbox), "{\"not\": \"an array\"}") << "never overwritten";
}

// Claude Code's lock (proper-lockfile: a folder) is waited for while it is
// held, and taken over once stale (its holder died).
TEST(ClaudeTeamTest, ASendWaitsForClaudeCodesLockAndTakesOverAStaleOne) {
  testing::TempDir dir;
  const fs::path h = CopyFixture(dir);
  ClaudeHome home(h);
  const fs::path inbox = h / "teams" / kTeam / "inboxes/beta.json";
  const fs::path lock = inbox.string() + ".lock";
  ASSERT_EQ(::mkdir(lock.c_str(), 0755), 0);
  std::atomic<bool> sent{false};
  std::thread sender([&] {
    EXPECT_TRUE(home.Send(kTeam, "user", "beta", "after the lock", "").ok());
    sent = true;
  });
  // Held: nothing written for as long as it is (a window of 300 ms).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(sent.load());
  EXPECT_EQ(ReadJson(inbox).size(), 1u);
  ASSERT_EQ(::rmdir(lock.c_str()), 0);
  sender.join();
  EXPECT_EQ(ReadJson(inbox).size(), 2u);
  // Stale: left 20 s ago by a holder that died.
  ASSERT_EQ(::mkdir(lock.c_str(), 0755), 0);
  struct timespec old[2] = {{::time(nullptr) - 20, 0}, {::time(nullptr) - 20, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, lock.c_str(), old, 0), 0);
  const Deadline quick = DeadlineIn(2);
  ASSERT_TRUE(home.Send(kTeam, "user", "beta", "over a stale lock", "").ok());
  EXPECT_FALSE(Expired(quick));
  EXPECT_EQ(ReadJson(inbox).size(), 3u);
  // One that stays held: an error in the end, not a wait forever.
  ASSERT_EQ(::mkdir(lock.c_str(), 0755), 0);
  auto held = DirLock::Acquire(lock, 0.2);
  EXPECT_EQ(held.status().code(), StatusCode::kConflict);
}

// Several processes sending to one inbox at once: every message is there,
// in a file that is always whole JSON.
TEST(ClaudeTeamTest, ProcessesSendingAtOnceLoseNothing) {
  testing::TempDir dir;
  const fs::path h = CopyFixture(dir);
  constexpr int kProcs = 4, kEach = 8;
  std::vector<std::thread> senders;
  std::atomic<int> failed{0};
  for (int p = 0; p < kProcs; ++p) {
    senders.emplace_back([&, p] {
      for (int i = 0; i < kEach; ++i) {
        auto r = testing::RunMates(dir.path(), {"claude", "send", kTeam, "beta",
                                                "m" + std::to_string(p) + "-" + std::to_string(i), "--home", h.string()});
        if (r.exit_code != 0) ++failed;
      }
    });
  }
  for (auto& s : senders) s.join();
  EXPECT_EQ(failed.load(), 0);
  const Json inbox = ReadJson(h / "teams" / kTeam / "inboxes/beta.json");
  ASSERT_TRUE(inbox.is_array());
  std::set<std::string> texts;
  for (const auto& m : inbox) texts.insert(m["text"].get<std::string>());
  EXPECT_EQ(inbox.size(), 1u + kProcs * kEach);
  for (int p = 0; p < kProcs; ++p) {
    for (int i = 0; i < kEach; ++i) EXPECT_EQ(texts.count("m" + std::to_string(p) + "-" + std::to_string(i)), 1u);
  }
}

// A page's requests come on several threads at once, while Claude Code
// writes: one store serves them all, each seeing whole messages.
TEST(ClaudeTeamTest, OneStoreServesThreadsWhileTheTeamWrites) {
  testing::TempDir dir;
  const fs::path h = CopyFixture(dir);
  auto store = OpenTeamStore("claude:" + h.string(), Workspace(dir.path()), testing::TestEnv());
  ASSERT_TRUE(store.ok());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&, r] {
      uint64_t cursor = 0;
      while (!stop) {
        auto page = r % 2 == 0 ? (*store)->LogAfter(kTeam, cursor, 0) : (*store)->TailLog(kTeam, 50, 0);
        if (!page.ok()) {
          ++bad;
          continue;
        }
        for (const auto& m : page->messages) bad += m.id.empty() || m.sender.empty();
        if (r % 2 == 0) cursor = page->next;
        auto v = view::LookAtTeam(**store, kTeam, 10);
        bad += !v.ok();
      }
    });
  }
  ClaudeHome writer(h);
  for (int i = 0; i < 30; ++i) {
    EXPECT_TRUE(writer.Send(kTeam, "user", i % 2 ? "alpha" : "beta", "note " + std::to_string(i), "").ok());
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  auto all = (*store)->LogAfter(kTeam, 0, 0);
  ASSERT_TRUE(all.ok());
  int notes = 0;
  for (const auto& m : all->messages) notes += m.content.rfind("note ", 0) == 0;
  EXPECT_EQ(notes, 30);
}

TEST(ClaudeTeamTest, ATaskTakesTheNextIdUnderTheBoardsLock) {
  testing::TempDir dir;
  const fs::path h = CopyFixture(dir);
  ClaudeHome home(h);
  const fs::path tasks = h / "tasks" / kTeam;
  const Json first = ReadJson(tasks / "1.json");
  testing::WriteAll(tasks / ".highwatermark", "7");  // #4…#7 were deleted
  auto t = home.CreateTask(kTeam, "Document it", "The README", {"1"});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->id, "8");
  Json j = ReadJson(tasks / "8.json");
  EXPECT_EQ(j["subject"], "Document it");
  EXPECT_EQ(j["status"], "pending");
  EXPECT_EQ(j["blockedBy"], Json::array({"1"}));
  EXPECT_EQ(j["blocks"], Json::array());
  Json blocker = ReadJson(tasks / "1.json");
  EXPECT_EQ(blocker["blocks"], Json::array({"8"}));
  blocker.erase("blocks");
  Json kept = first;
  kept.erase("blocks");
  EXPECT_EQ(blocker, kept) << "the rest of #1 as it was";
  EXPECT_EQ(home.CreateTask(kTeam, "x", "", {"99"}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(home.CreateTask(kTeam, "", "", {}).status().code(), StatusCode::kInvalidArgument);
  // Made at once by several threads: each its own id.
  std::vector<std::thread> makers;
  std::vector<std::string> ids(12);
  for (size_t i = 0; i < ids.size(); ++i) {
    makers.emplace_back([&, i] {
      auto r = home.CreateTask(kTeam, "parallel " + std::to_string(i), "", {});
      if (r.ok()) ids[i] = r->id;
    });
  }
  for (auto& m : makers) m.join();
  std::set<std::string> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), ids.size());
  EXPECT_EQ(distinct.count(""), 0u);
}

TEST(ClaudeTeamTest, TeammateMessagesAreReadOutOfATurn) {
  auto ms = MessagesInTurn("Another Claude session sent a message:\n"
                           "<teammate-message teammate_id=\"beta\" color=\"green\" summary=\"a &quot;quote&quot;\">\n"
                           "line one\nline two\n</teammate-message>\n\n"
                           "<teammate-message teammate_id=\"alpha\">\n{\"type\":\"idle_notification\",\"from\":\"alpha\"}\n"
                           "</teammate-message>\n<teammate-message teammate_id=\"cut\">no end",
                           "team-lead", 5);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].from, "beta");
  EXPECT_EQ(ms[0].to, "team-lead");
  EXPECT_EQ(ms[0].summary, "a \"quote\"");
  EXPECT_EQ(ms[0].text, "line one\nline two");
  EXPECT_TRUE(ms[0].protocol.empty());
  EXPECT_EQ(ms[1].protocol, "idle_notification");
  EXPECT_EQ(Gist(ms[1]), "idle");
  EXPECT_TRUE(MessagesInTurn("<teammate-message>", "x", 0).empty());
  EXPECT_EQ(TeamFolderName("My Team!"), "my-team-");
  EXPECT_EQ(FileNameOf("a/b c_d-e"), "a-b-c_d-e");
}

}  // namespace
}  // namespace mates::claude

namespace mates::claude {
namespace {

// The commands, on the fixture: what they show, and one clear error for
// each thing given wrong.
TEST(ClaudeCommandsTest, ShowTheTeamAndSayWhatIsWrong) {
  testing::TempDir dir;
  const fs::path h = CopyFixture(dir);
  const std::string home = h.string();
  auto run = [&](const std::vector<std::string>& args) { return testing::RunMates(dir.path(), args); };
  auto list = run({"claude", "list", "--home", home});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find(std::string(kTeam) + "  ended  3 members (team-lead, alpha, beta)  3 tasks"), std::string::npos)
      << list.out;
  auto json = ParseJson(run({"claude", "list", "--json", "--home", home}).out);
  ASSERT_TRUE(json.ok());
  EXPECT_EQ((*json)[0]["team"], kTeam);
  EXPECT_EQ((*json)[0]["running"], false);
  auto status = run({"claude", "status", kTeam, "--home", home});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("Claude Code team " + std::string(kTeam) + " — not running"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("1 unread"), std::string::npos) << status.out;
  auto doc = ParseJson(run({"claude", "status", kTeam, "--home", home, "--json"}).out);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["foreign"], "Claude Code");
  // The same team through the store URL, for any command that takes one.
  auto log = run({"--store", "claude:" + home, "log", "--team", kTeam});
  EXPECT_EQ(log.exit_code, 0) << log.err;
  EXPECT_NE(log.out.find("beta -> alpha (message) [hello from beta]: Hello alpha, beta here. Send me code."),
            std::string::npos)
      << log.out;
  auto sent = run({"claude", "send", kTeam, "alpha", "from the command line", "--home", home});
  EXPECT_EQ(sent.exit_code, 0) << sent.err;
  auto task = run({"claude", "task", kTeam, "From the command line", "--blocked-by", "1", "--home", home});
  EXPECT_EQ(task.exit_code, 0) << task.err;
  EXPECT_NE(task.out.find("created #4"), std::string::npos) << task.out;

  auto says = [&](const std::vector<std::string>& args, int code, const std::string& words) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    auto r = run(args);
    EXPECT_EQ(r.exit_code, code) << line << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << line << "\n" << r.err;
  };
  says({"claude", "status", "nobody", "--home", home}, 1, "no Claude Code team 'nobody'");
  says({"claude", "status", kTeam, "--home", home, "--watch", "--json"}, 2, "choose one");
  says({"claude", "send", kTeam, "gamma", "hi", "--home", home}, 1, "no member 'gamma'");
  says({"claude", "send", kTeam, "alpha", "", "--home", home}, 2, "an empty message");
  says({"claude", "task", kTeam, "x", "--blocked-by", "99", "--home", home}, 1, "no task #99");
  says({"claude"}, 2, "");
  says({"dashboard", "--claude-home", home}, 2, "--claude-home goes with --claude TEAM");
  says({"dashboard", "--claude", "nobody", "--claude-home", home}, 1, "no Claude Code team 'nobody'");
  says({"--store", "claude:" + (dir.path() / "nothing").string(), "status", "--team", kTeam}, 1, "no Claude Code home at");
  says({"--store", "claude:" + home, "tasks", "--team", kTeam, "claim", "1", "--owner", "beta"}, 1, "Claude Code's team");
}

}  // namespace
}  // namespace mates::claude
