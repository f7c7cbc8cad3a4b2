// `mates report` end to end (DESIGN §31): the real binary over real
// records — the demo's archived team, a hosted team whose model server
// (a real `mates mock-llm` over HTTP) is killed and whose budget runs out,
// and records damaged or written to harm (a torn journal, one edited by
// hand, a journal of a gigabyte, markup in anyone's text).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
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
  // The team the lead made in the demo's session, from the app's commit.
  ASSERT_EQ(r["sessions"].size(), 1u) << r["sessions"].dump();
  EXPECT_EQ(r["sessions"][0]["how"], "made");
  EXPECT_EQ(r["sessions"][0]["commit"].get<std::string>().size(), 40u);
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
  EXPECT_EQ(r["failures_by_class"].value("specification", 0), 1) << r["failures"].dump(2);
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
  // A journal written to flood the report: listed to a bound, all counted.
  Member flood;
  flood.name = "flood";
  ASSERT_TRUE(Roster(Workspace(ws.path())).AddMember("h", flood).ok());
  std::string lines;
  for (int i = 0; i < 5000; ++i) {
    lines += R"({"kind":"turn_end","end":"failed","in":"model","why":"HTTP 503","ts":)" + std::to_string(10 + i) + "}\n";
  }
  WriteAll(agents / "flood.jsonl", lines);
  // A gigabyte, sparse: what a report reads of it is bounded.
  { std::ofstream(agents / "big.jsonl"); }
  fs::resize_file(agents / "big.jsonl", uintmax_t{1} << 30);

  auto json = mates({"report", "--team", "h", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  rusage used{};
  ASSERT_EQ(::getrusage(RUSAGE_CHILDREN, &used), 0);
  // KiB, of the report (and every child before it): a gigabyte read whole
  // would be over either bound (AddressSanitizer's shadow and quarantine
  // take room of their own).
#if defined(__SANITIZE_ADDRESS__)
  constexpr long kBound = 768 * 1024;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  constexpr long kBound = 768 * 1024;
#else
  constexpr long kBound = 256 * 1024;
#endif
#else
  constexpr long kBound = 256 * 1024;
#endif
  EXPECT_LT(used.ru_maxrss, kBound);
  const Json r = Parsed(json);
  const std::string notes = r["notes"].dump();
  EXPECT_NE(notes.find("lead's journal has 1 line(s) that are not JSON objects"), std::string::npos) << notes;
  EXPECT_NE(notes.find("lead's journal ends in a cut line"), std::string::npos) << notes;
  EXPECT_NE(notes.find("lead's journal, line 3: "), std::string::npos) << notes;
  EXPECT_NE(notes.find("big's journal is over 64 MiB"), std::string::npos) << notes;
  EXPECT_EQ(r["failures_by_class"].value("provider", 0), 5000);
  EXPECT_EQ(r["failures"].size(), 2000u);
  EXPECT_NE(notes.find("2000 of 5000 failures are listed"), std::string::npos) << notes;
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

// A bundle carries a session to another workspace (DESIGN §31): exported
// from the demo's archive with the workspace's git history, imported as an
// archive there, it reports as it did here, and its history clones.
TEST(ReportTest, ABundleCarriesASessionToAnotherWorkspace) {
  TempDir tmp;
  const fs::path ws = tmp.path() / "demo";
  ASSERT_EQ(testing::Run({testing::MatesBinary(), "demo", "--workspace", ws.string()}).exit_code, 0);
  auto git = [&](const fs::path& dir, std::vector<std::string> args) {
    std::vector<std::string> argv = {"git", "-C", dir.string(), "-c", "user.name=t", "-c", "user.email=t@t"};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::Run(argv);
  };
  ASSERT_EQ(git(ws, {"init", "-q", "-b", "main"}).exit_code, 0);
  ASSERT_EQ(git(ws, {"add", "schema.graphql", "server"}).exit_code, 0);
  ASSERT_EQ(git(ws, {"commit", "-q", "-m", "the demo's work"}).exit_code, 0);
  const std::string head = git(ws, {"rev-parse", "HEAD"}).out.substr(0, 40);

  const fs::path bundle = tmp.path() / "session.tgz";
  auto out = testing::RunMates(ws, {"export", "--bundle", bundle.string(), "--team", "rest-to-graphql", "--archived"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find("git: HEAD"), std::string::npos) << out.out;
  EXPECT_FALSE(fs::exists(bundle.string() + ".part-" + std::to_string(::getpid())));

  const fs::path there = tmp.path() / "elsewhere";
  fs::create_directories(there);
  auto in = testing::RunMates(there, {"import", bundle.string()});
  ASSERT_EQ(in.exit_code, 0) << in.err;
  const std::smatch stamp = [&] {
    std::smatch m;
    std::regex_search(in.out, m, std::regex("as its archive (\\S+):"));
    return m;
  }();
  ASSERT_FALSE(stamp.empty()) << in.out;
  // Read there as here: the same agents, tasks, bars and failures.
  auto report = [](const fs::path& at, const std::string& which) {
    std::vector<std::string> args = {"report", "--team", "rest-to-graphql", "--archived", "--json"};
    if (!which.empty()) args.insert(args.begin() + 4, which);
    return Parsed(testing::RunMates(at, args));
  };
  const Json here = report(ws, ""), read_there = report(there, stamp[1].str());
  for (const char* part : {"agents", "tasks", "timeline", "failures", "decisions", "totals", "merges"}) {
    EXPECT_EQ(here[part], read_there[part]) << part;
  }
  EXPECT_EQ(here["messages"]["total"], read_there["messages"]["total"]);
  auto usage = testing::RunMates(there, {"usage", "--team", "rest-to-graphql", "--archived"});
  EXPECT_EQ(usage.exit_code, 0) << usage.err;
  // Its report and its history came with it.
  const fs::path archive = there / ".teams" / ".archive" / ("rest-to-graphql-" + stamp[1].str());
  EXPECT_NE(ReadAll(archive / "report.html").find("<h1>Team rest-to-graphql</h1>"), std::string::npos);
  ASSERT_EQ(git(there, {"clone", "-q", (archive / "repo.bundle").string(), "clone"}).exit_code, 0);
  EXPECT_EQ(git(there / "clone", {"rev-parse", "HEAD"}).out.substr(0, 40), head);
  EXPECT_EQ(ReadAll(there / "clone" / "schema.graphql"), ReadAll(ws / "schema.graphql"));
  // Imported twice: two archives, neither overwritten.
  auto again = testing::RunMates(there, {"import", bundle.string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.find("as its archive " + stamp[1].str() + ":"), std::string::npos) << again.out;

  // Bad input: one clear error each.
  auto none = testing::RunMates(there, {"import", (tmp.path() / "nope.tgz").string()});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("nope.tgz"), std::string::npos) << none.err;
  auto live = testing::RunMates(ws, {"export", "--bundle", bundle.string(), "--team", "nosuch"});
  EXPECT_EQ(live.exit_code, 1);
  EXPECT_NE(live.err.find("nosuch"), std::string::npos) << live.err;
  auto missing = testing::RunMates(ws, {"export", "--team", "rest-to-graphql"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
}

// Reading a bundle is reading anyone's file: each hostile one is refused
// with one clear error naming its entry, and leaves nothing behind — no
// archive, no half-unpacked folder, no file outside.
TEST(ReportTest, AHostileBundleIsRefusedAndLeavesNothing) {
  TempDir tmp;
  const fs::path ws = tmp.path() / "ws";
  fs::create_directories(ws);
  // tar.gz files made by Python's tarfile: ENTRIES is a list of (name,
  // kind, data) — kind "file", "symlink" (data: the target), "hardlink".
  auto make = [&](const std::string& name, const std::string& entries) {
    const fs::path out = tmp.path() / name;
    const std::string py = R"(
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w:gz") as t:
    for name, kind, data in )" + entries + R"(:
        i = tarfile.TarInfo(name)
        if kind == "file":
            b = data.encode(); i.size = len(b); t.addfile(i, io.BytesIO(b))
        else:
            i.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE; i.linkname = data; t.addfile(i)
)";
    auto r = testing::Run({"python3", "-c", py, out.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  };
  const std::string manifest = R"(("bundle.json", "file", '{"format": "mates-bundle", "version": 1, "team": "t"}'))";
  const std::string roster = R"((".teams/t/config.json", "file", '{"name": "t", "lead": "lead", "members": []}'))";
  struct Case {
    std::string what, entries, says;
  };
  const std::vector<Case> cases = {
      {"a path up and out", "[" + manifest + ", (\"../evil\", \"file\", \"x\")]", "outside the team's folders"},
      {"a path out from inside", "[" + manifest + ", (\".teams/t/../../../evil\", \"file\", \"x\")]", "escapes"},
      {"an absolute path", "[" + manifest + ", (\"/tmp/evil\", \"file\", \"x\")]", "outside the team's folders"},
      {"a symlink", "[" + manifest + ", (\".teams/t/agents\", \"symlink\", \"/etc\"), " + roster + "]",
       "not a regular file"},
      {"a hard link", "[" + manifest + ", " + roster + ", (\".teams/t/x\", \"hardlink\", \".teams/t/config.json\")]",
       "not a regular file"},
      {"an entry twice", "[" + manifest + ", " + roster + ", " + roster + "]", "twice"},
      {"no manifest first", "[" + roster + ", " + manifest + "]", "first entry is not bundle.json"},
      {"another team's name", "[(\"bundle.json\", \"file\", '{\"format\": \"mates-bundle\", \"version\": 1, "
                              "\"team\": \"../x\"}')]",
       "team name"},
      {"a later version", "[(\"bundle.json\", \"file\", '{\"format\": \"mates-bundle\", \"version\": 9, "
                          "\"team\": \"t\"}')]",
       "version 9"},
      {"no roster", "[" + manifest + ", (\".tasks/t/1.json\", \"file\", \"{}\")]", "no roster"},
      {"a second manifest", "[" + manifest + ", " + manifest + "]", "outside the team's folders"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const fs::path bundle = make("hostile.tgz", c.entries);
    auto r = testing::RunMates(ws, {"import", bundle.string()});
    EXPECT_EQ(r.exit_code, 2) << r.out;  // bad input
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const auto& left : testing::ListFiles(ws)) {
      EXPECT_TRUE(left == ".teams" || left == ".teams/.archive") << left;  // the (empty) archives' folder
    }
    EXPECT_FALSE(fs::exists(tmp.path() / "evil"));
    EXPECT_FALSE(fs::exists("/tmp/evil"));
  }
  WriteAll(tmp.path() / "noise.tgz", std::string(4096, '\x17'));
  auto noise = testing::RunMates(ws, {"import", (tmp.path() / "noise.tgz").string()});
  EXPECT_EQ(noise.exit_code, 2);
  EXPECT_NE(noise.err.find("not a mates bundle"), std::string::npos) << noise.err;
  // The same made right imports.
  auto fine = testing::RunMates(ws, {"import", make("fine.tgz", "[" + manifest + ", " + roster + "]").string()});
  EXPECT_EQ(fine.exit_code, 0) << fine.err;
}

}  // namespace
}  // namespace mates
