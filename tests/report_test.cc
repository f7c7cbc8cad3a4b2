// `mates report` end to end (DESIGN §31): the real binary over real
// records — the demo's archived team, a hosted team whose model server
// (a real `mates mock-llm` over HTTP) is killed and whose budget runs out,
// and records damaged or written to harm (a torn journal, one edited by
// hand, a journal of a gigabyte, markup in anyone's text).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json.h"
#include "store/roster.h"
#include "store/workspace.h"
#include "support/test_util.h"

namespace mates {
namespace {

using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

Json Parsed(const testing::CommandResult& r) {
  auto j = ParseJson(r.out);
  EXPECT_TRUE(j.ok()) << r.out << r.err;
  return j.ok() ? *j : Json::object();
}

// The failures of a report of class `kind` (whose words hold `words`).
std::vector<Json> FailuresOf(const Json& report, const std::string& kind, const std::string& words = "") {
  std::vector<Json> out;
  for (const auto& f : report.value("failures", Json::array())) {
    if (f.value("class", "") == kind && f.value("what", "").find(words) != std::string::npos) out.push_back(f);
  }
  return out;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportTest, TheDemosRecordReadsAsAWhole) {
  TempDir tmp;
  const fs::path ws = tmp.path() / "demo";
  auto demo = testing::Run({testing::MatesBinary(), "demo", "--workspace", ws.string()});
  ASSERT_EQ(demo.exit_code, 0) << demo.out << demo.err;
  auto mates = [&](std::vector<std::string> args) { return testing::RunMates(ws, args); };
  const std::vector<std::string> team = {"report", "--team", "rest-to-graphql", "--archived"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> all = team;
    all.insert(all.end(), more.begin(), more.end());
    return mates(all);
  };

  // The deleted team is found where it went, and said so without --archived.
  auto live = mates({"report", "--team", "rest-to-graphql"});
  EXPECT_EQ(live.exit_code, 1);
  EXPECT_NE(live.err.find("--archived"), std::string::npos) << live.err;

  const Json r = Parsed(with({"--json"}));
  EXPECT_EQ(r.value("state", "").rfind("archived ", 0), 0u) << r.value("state", "");
  // Per agent, what `mates usage` says.
  const Json usage = Parsed(mates({"usage", "--team", "rest-to-graphql", "--archived", "--json"}));
  std::map<std::string, Json> spent;
  for (const auto& a : usage["agents"]) spent[a.value("agent", "")] = a;
  ASSERT_EQ(r["agents"].size(), 4u) << r["agents"].dump();
  for (const auto& a : r["agents"]) {
    const std::string name = a.value("name", "");
    ASSERT_EQ(spent.count(name), 1u) << name;
    EXPECT_EQ(a.value("calls", -1), spent[name].value("calls", -2)) << name;
    EXPECT_EQ(a.value("tokens", -1), spent[name].value("tokens", -2)) << name;
    EXPECT_GT(a.value("turns", 0), 0) << name;
    EXPECT_GT(a.value("tool_calls", 0), 0) << name;
  }
  EXPECT_EQ(r["totals"].value("calls", -1), usage.value("calls", -2));
  // Per task: each completed, held by someone, its calls part of the whole.
  int task_calls = 0;
  ASSERT_EQ(r["tasks"].size(), 4u);
  for (const auto& t : r["tasks"]) {
    EXPECT_EQ(t.value("status", ""), "completed") << t.dump();
    EXPECT_FALSE(t["owners"].empty()) << t.dump();
    EXPECT_GT(t.value("calls", 0), 0) << t.dump();
    task_calls += t.value("calls", 0);
  }
  EXPECT_LE(task_calls, r["totals"].value("calls", 0));
  // The timeline: a bar per task held, within the record's span.
  ASSERT_EQ(r["timeline"].size(), 4u) << r["timeline"].dump();
  for (const auto& b : r["timeline"]) {
    EXPECT_LE(r.value("started", 0.0), b.value("from", 0.0));
    EXPECT_LE(b.value("from", 0.0), b.value("to", 0.0));
    EXPECT_LE(b.value("to", 0.0), r.value("ended", 0.0));
  }
  // Every message of the log is counted, and the flow adds up to them.
  const std::string log = ReadAll(
      fs::path(r.value("where", "")) / ".teams" / "rest-to-graphql" / "messages.jsonl");
  EXPECT_EQ(r["messages"].value("total", 0), static_cast<int>(Count(log, "\n")));
  int flow = 0;
  for (const auto& f : r["messages"]["flow"]) flow += f.value("count", 0);
  EXPECT_EQ(flow, r["messages"].value("total", -1));
  // The demo's rejected plan: a specification failure, and the lead's
  // decisions on it.
  auto rejected = FailuresOf(r, "specification", "frontend's plan was rejected by lead");
  ASSERT_EQ(rejected.size(), 1u) << r["failures"].dump(2);
  EXPECT_EQ(rejected[0].value("task", 0), 4) << "while frontend held task #4";
  EXPECT_EQ(r["failures_by_class"].value("specification", 0), 1);
  std::string decisions = r["decisions"].dump();
  EXPECT_NE(decisions.find("rejected frontend's plan"), std::string::npos) << decisions;
  EXPECT_NE(decisions.find("approved frontend's plan"), std::string::npos) << decisions;

  // Markdown by default, each part there.
  auto md = with({});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  for (const char* part : {"# Report: team rest-to-graphql", "## Timeline", "## Failures", "## Tokens and cost",
                           "## Messages", "## Merges", "## Decisions", "frontend's plan was rejected by lead"}) {
    EXPECT_NE(md.out.find(part), std::string::npos) << part << "\n" << md.out;
  }
  // One page, nothing fetched: no script, no link, no source; its policy
  // forbids any.
  const fs::path page = tmp.path() / "report.html";
  auto html = with({"--html", page.string()});
  ASSERT_EQ(html.exit_code, 0) << html.err;
  const std::string text = ReadAll(page);
  EXPECT_NE(text.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  for (const char* never : {"<script", "src=", "href=", "url(", "@import"}) {
    EXPECT_EQ(text.find(never), std::string::npos) << never;
  }
  EXPECT_EQ(Count(text, "<g class=\"bar\""), 4u);
  // The same page on stdout (but for the moment it was made, at its foot).
  const std::string out = with({"--html", "-"}).out;
  EXPECT_EQ(out.substr(0, out.find("<footer>")), text.substr(0, text.find("<footer>")));

  // Bad input: one clear error each.
  auto two = with({"--json", "--md"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("choose one"), std::string::npos) << two.err;
  auto none = mates({"report", "--team", "nosuch"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("nosuch"), std::string::npos) << none.err;
  auto bad = mates({"report", "--team", "../x"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  auto stamp = with({"19990101T000000"});
  EXPECT_EQ(stamp.exit_code, 1);
  EXPECT_NE(stamp.err.find("19990101T000000"), std::string::npos) << stamp.err;
  auto nowhere = with({"--html", (tmp.path() / "no" / "such" / "dir" / "r.html").string()});
  EXPECT_EQ(nowhere.exit_code, 1) << nowhere.err;
}

// A hosted team whose model server is killed: the failed turn is a
// provider failure; its budget spent later, a budget failure; the report
// of a live team says so.
TEST(ReportTest, AModelServerKilledAndABudgetSpentAreEachInTheirClass) {
  TempDir ws;
  auto mates = [&](std::vector<std::string> args) {
    return testing::RunMates(ws.path(), args, {"ANTHROPIC_API_KEY=sk-test-not-a-real-key"});
  };
  WriteAll(ws.path() / "quiet.json", R"({"default_reply": [{"type": "text", "text": "Noted."}]})");
  testing::ModelServer server(ws.path() / "quiet.json");
  auto up = mates({"up", "--team", "rep", "--provider", "anthropic", "--base-url", server.url(), "--no-dashboard",
                   "--sandbox", "off", "Say hello"});
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  auto report = [&] { return Parsed(mates({"report", "--team", "rep", "--json"})); };
  auto calls_of_lead = [&](const Json& r) {
    for (const auto& a : r.value("agents", Json::array())) {
      if (a.value("name", "") == "lead") return a.value("calls", 0);
    }
    return 0;
  };
  ASSERT_TRUE(testing::WaitUntil([&] { return calls_of_lead(report()) >= 1; }, 30)) << report().dump(2);
  Json r = report();
  EXPECT_EQ(r.value("state", "").rfind("live (host pid ", 0), 0u) << r.value("state", "");
  EXPECT_TRUE(FailuresOf(r, "provider").empty()) << r["failures"].dump(2);

  server.Stop();
  ASSERT_EQ(mates({"send", "--team", "rep", "--to", "lead", "Are you there?"}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return !FailuresOf(report(), "provider").empty(); }, 60))
      << report().dump(2);
  r = report();
  auto provider = FailuresOf(r, "provider", "its model call failed");
  ASSERT_EQ(provider.size(), 1u) << r["failures"].dump(2);
  EXPECT_EQ(provider[0].value("agent", ""), "lead");
  EXPECT_NE(provider[0].value("where", "").find("lead's journal, line "), std::string::npos);
  EXPECT_GE(provider[0].value("at", 0.0), r.value("started", 1e18));
  // `mates logs` says it too, from the same line.
  auto logs = mates({"logs", "--team", "rep"});
  EXPECT_NE(logs.out.find("turn failed: "), std::string::npos) << logs.out;

  // The server back and the budget spent: the next turn makes no call.
  server.Start(server.port());
  ASSERT_EQ(mates({"budget", "set", "--team", "rep", "--tokens", "1"}).exit_code, 0);
  ASSERT_EQ(mates({"send", "--team", "rep", "--to", "lead", "Go on."}).exit_code, 0);
  ASSERT_TRUE(testing::WaitUntil([&] { return !FailuresOf(report(), "budget", "no further model calls").empty(); }, 30))
      << report().dump(2);
  r = report();
  EXPECT_EQ(FailuresOf(r, "budget", "no further model calls")[0].value("agent", ""), "lead");
  EXPECT_NE(r.value("budget", "").find("tokens"), std::string::npos) << r.dump(2);
  auto md = mates({"report", "--team", "rep"});
  EXPECT_NE(md.out.find("**provider** "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("**budget** "), std::string::npos) << md.out;
  EXPECT_EQ(mates({"down", "--team", "rep", "--timeout", "10"}).exit_code, 0);
  EXPECT_EQ(Parsed(mates({"report", "--team", "rep", "--json"})).value("state", ""), "stopped (no host)");
}

// What the record holds damaged or written to harm is said in the report,
// which is still made: a torn line, lines edited by hand, a journal of a
// gigabyte (read no further than its bound), markup in a message and a
// task's subject (shown as text).
TEST(ReportTest, ADamagedOrHostileRecordIsSaidNotFatal) {
  TempDir ws;
  auto mates = [&](std::vector<std::string> args) { return testing::RunMates(ws.path(), args); };
  ASSERT_EQ(mates({"team", "create", "h"}).exit_code, 0);
  Member big;
  big.name = "big";
  ASSERT_TRUE(Roster(Workspace(ws.path())).AddMember("h", big).ok());
  ASSERT_EQ(mates({"send", "--team", "h", "--to", "lead", "<script>alert(1)</script>"}).exit_code, 0);
  ASSERT_EQ(mates({"tasks", "--team", "h", "create", "</td><img src=x onerror=alert(1)>"}).exit_code, 0);
  const fs::path agents = Workspace(ws.path()).AgentsDir("h");
  fs::create_directories(agents);
  WriteAll(agents / "lead.jsonl",
           std::string(R"({"kind":"message","message":{"role":"user","content":"the goal"},"ts":1})") + "\n" +
               "this line was typed by a person\n" +
               R"({"kind":"message","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"nope","content":"x"}]}})" +
               "\n" + R"({"kind":"usage","model":"m","usage":{"input_tokens":5,"output_tokens":1},"ts":2})" + "\n" +
               R"({"kind":"message","message":{"role":"assist)");
  // A gigabyte, sparse: what a report reads of it is bounded.
  { std::ofstream(agents / "big.jsonl"); }
  fs::resize_file(agents / "big.jsonl", uintmax_t{1} << 30);

  auto json = mates({"report", "--team", "h", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  rusage used{};
  ASSERT_EQ(::getrusage(RUSAGE_CHILDREN, &used), 0);
  EXPECT_LT(used.ru_maxrss, 256 * 1024) << "KiB at most, of the report (and every child before it)";
  const Json r = Parsed(json);
  const std::string notes = r["notes"].dump();
  EXPECT_NE(notes.find("lead's journal has 1 line(s) that are not JSON objects"), std::string::npos) << notes;
  EXPECT_NE(notes.find("lead's journal ends in a cut line"), std::string::npos) << notes;
  EXPECT_NE(notes.find("lead's journal, line 3: "), std::string::npos) << notes;
  EXPECT_NE(notes.find("big's journal is over 64 MiB"), std::string::npos) << notes;
  for (const auto& a : r["agents"]) {
    if (a.value("name", "") == "lead") {
      EXPECT_EQ(a.value("calls", 0), 1) << a.dump();
    }
  }
  auto page = mates({"report", "--team", "h", "--html", "-"});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  EXPECT_EQ(page.out.find("<script"), std::string::npos);
  EXPECT_EQ(page.out.find("<img"), std::string::npos);
  EXPECT_NE(page.out.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.out.find("&lt;/td&gt;&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  auto md = mates({"report", "--team", "h"});
  EXPECT_EQ(md.out.find("<img"), std::string::npos) << md.out;
  EXPECT_EQ(md.out.find("<script"), std::string::npos) << md.out;
}

}  // namespace
}  // namespace mates
