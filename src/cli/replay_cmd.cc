// mates replay [--team T] [--store URL] [--archived [STAMP]] --into DIR
//              [--json] [--give-up S] [--sandbox MODE]
//
// Re-enacts a recorded session with no model (DESIGN §31, replay/): DIR
// becomes a fresh checkout of the commit the session started from, a host
// runs the session there with a provider that answers each agent with its
// recorded replies (replay/replayer.h), its tools run again in DIR and its
// messages, claims and merges happen again in DIR's own store. Then, per
// agent, its first divergence or none, and the board compared. Exit 0 when
// nothing diverged, 3 when something did.
//
// The record is the session's: the team where its lead started, and the
// teams the lead moved to from there (TeamCreate), live or archived. A
// team a lead made is replayed from the team it was made in, when that is
// here (else from its own record: an imported bundle).
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/run_options.h"
#include "cli/store_choice.h"
#include "core/files.h"
#include "core/names.h"
#include "git/git.h"
#include "git/worktrees.h"
#include "host/session.h"
#include "replay/record.h"
#include "replay/replayer.h"
#include "store/archive.h"
#include "store/board.h"
#include "store/messenger.h"
#include "store/roster.h"

namespace mates::cli {
namespace {

constexpr size_t kMaxJournal = size_t{64} << 20;   // a journal replayed is read whole (as a report's)
constexpr int kMaxTeams = 8;                       // teams one session's lead moved through
constexpr int kDiverged = 3;

struct ReplayArgs {
  std::string into;
  bool json = false;
  double give_up = 10;
  std::string sandbox;
  ArchivedChoice archived;
};

// A team of the session and the store its record is read from.
struct RecordedTeam {
  std::string name;
  std::shared_ptr<TeamStore> store;
  fs::path root;  // the workspace (or archive) that holds it
  TeamConfig config;
  std::string lead_journal;
};

struct Recording {
  std::vector<RecordedTeam> teams;  // the start first
  bool open_ended = false;          // the start's record is a made team's alone
  std::string start_team;           // where the replayed session starts
  TeamSession session;                // the first
  std::vector<TeamSession> sessions;  // each, in order (the start team's)
  fs::path repo;                    // where the commit is
  std::vector<std::string> notes;
};

Result<std::string> JournalOf(TeamStore& store, const std::string& team, const std::string& member) {
  auto j = store.ReadJournal(team, member, kMaxJournal);
  if (!j.ok()) {
    if (j.status().code() == StatusCode::kNotFound) return std::string();
    return j.status();
  }
  if (j->too_large) {
    return Status::FailedPrecondition(member + "'s journal in team " + team + " is over " +
                                      std::to_string(kMaxJournal >> 20) + " MiB (" + j->where +
                                      "): too large to replay");
  }
  return std::move(j->text);
}

Result<RecordedTeam> TeamFrom(std::shared_ptr<TeamStore> store, const fs::path& root, const std::string& name) {
  RecordedTeam t{name, std::move(store), root, {}, {}};
  MATES_ASSIGN_OR_RETURN(t.config, t.store->LoadTeam(name));
  MATES_ASSIGN_OR_RETURN(t.lead_journal, JournalOf(*t.store, name, t.config.lead));
  return t;
}

// Team `name` of the session, which its lead moved to after `after`: live
// in the workspace, else its earliest archive whose lead journal starts
// then or later.
Result<RecordedTeam> FindMovedTo(Globals& g, const std::string& name, double after) {
  if (auto live = OpenChosenStore(g, g.store, g.ws()); live.ok()) {
    std::shared_ptr<TeamStore> store = std::move(*live);
    if (auto t = TeamFrom(store, g.ws().root(), name); t.ok()) return t;
  }
  MATES_ASSIGN_OR_RETURN(auto archives, ListArchives(g.ws(), name));
  for (const auto& a : archives) {
    Workspace ws(a.root);
    auto t = TeamFrom(FileTeamStore(ws, g.env()), a.root, name);
    if (t.ok() && replay::FirstTime(t->lead_journal) >= after) return t;
  }
  return Status::NotFound("team " + name + ", where the session's lead went on, is neither here nor archived");
}

// The session's record: its start team, found from the team named (a made
// team's start is the one it was made in), and the teams its lead moved to.
Result<Recording> FindRecording(Globals& g, const ArchivedChoice& archived) {
  MATES_ASSIGN_OR_RETURN(ReadingStore reading, OpenReadingStore(g, g.team, archived));
  std::shared_ptr<TeamStore> named_store = std::move(reading.store);
  auto named = TeamFrom(named_store, reading.ws.root(), g.team);
  if (!named.ok()) return SayIfArchived(named.status(), g.ws(), g.team, archived);
  Recording r;
  const fs::path bundle = reading.ws.root() / "repo.bundle";
  r.repo = fs::exists(bundle) ? bundle : g.ws().root();
  if (std::string parent = replay::CameFrom(named->lead_journal);
      !parent.empty() && parent != g.team && ValidateName("team name", parent).ok()) {
    auto start = OpenChosenStore(g, g.store, g.ws());
    std::shared_ptr<TeamStore> store = start.ok() ? std::move(*start) : nullptr;
    auto t = store ? TeamFrom(store, g.ws().root(), parent) : Result<RecordedTeam>(start.status());
    // A team of that name here whose lead never went to this one is
    // another's (an imported bundle's workspace has its own).
    const bool its = t.ok() && std::ranges::count(replay::MovedTo(t->lead_journal), g.team) > 0;
    if (its) {
      r.notes.push_back("team " + g.team + " was made by the lead of team " + parent + ": the session replayed is " +
                        parent + "'s");
      r.teams.push_back(std::move(*t));
    } else {
      r.open_ended = true;
      r.notes.push_back("team " + g.team + " was made by the lead of team " + parent +
                        ", whose record is not here: the lead's replay starts from what " + g.team + " holds");
    }
    r.start_team = parent;
  }
  if (r.teams.empty()) r.teams.push_back(std::move(*named));
  if (r.start_team.empty()) r.start_team = r.teams[0].name;
  for (size_t i = 0; i < r.teams.size() && static_cast<int>(r.teams.size()) < kMaxTeams; ++i) {
    const double after = replay::FirstTime(r.teams[0].lead_journal);
    for (const auto& m : replay::MovedTo(r.teams[i].lead_journal)) {
      if (std::any_of(r.teams.begin(), r.teams.end(), [&](const RecordedTeam& t) { return t.name == m; })) continue;
      if (Status s = ValidateName("team name", m); !s.ok()) {
        return Status::Corrupt("the lead's journal names a team it moved to that is no team name: " + s.message());
      }
      if (named.ok() && m == g.team) {
        r.teams.push_back(std::move(*named));
        named = Status::NotFound("taken");
        continue;
      }
      MATES_ASSIGN_OR_RETURN(RecordedTeam t, FindMovedTo(g, m, after));
      r.teams.push_back(std::move(t));
    }
  }
  r.sessions = r.teams[0].config.sessions;
  if (r.sessions.empty()) {
    return Status::FailedPrecondition("team " + r.teams[0].name + " has no recorded session start");
  }
  std::sort(r.sessions.begin(), r.sessions.end(),
            [](const TeamSession& a, const TeamSession& b) { return a.started_at < b.started_at; });
  r.session = r.sessions.front();
  return r;
}

// Every agent of the recording, each from all its journals.
Result<std::vector<replay::RecordedAgent>> ReadAgents(const Recording& r, std::vector<std::string>* notes) {
  std::vector<replay::RecordedAgent> agents;
  std::vector<replay::JournalSource> lead;
  for (const auto& t : r.teams) lead.push_back({t.name, t.lead_journal});
  replay::RecordedAgent l = replay::ReadAgent(r.teams[0].config.lead, lead, r.open_ended, notes);
  l.open_ended = r.open_ended;
  agents.push_back(std::move(l));
  for (const auto& t : r.teams) {
    for (const auto& m : t.config.members) {
      if (m.name == t.config.lead) continue;
      for (const auto& a : agents) {
        if (a.name == m.name) {
          return Status::FailedPrecondition("two teams of the session have a member named " + m.name +
                                            ": a replay knows each agent by its name");
        }
      }
      MATES_ASSIGN_OR_RETURN(std::string text, JournalOf(*t.store, t.name, m.name));
      agents.push_back(replay::ReadAgent(m.name, {{t.name, text}}, false, notes));
    }
  }
  return agents;
}

Status CheckInto(const fs::path& into, const Globals& g) {
  std::error_code ec;
  if (fs::exists(into, ec) && (!fs::is_directory(into, ec) || !fs::is_empty(into, ec))) {
    return Status::InvalidArgument("--into " + into.string() + " is not an empty folder: a replay makes its own");
  }
  const fs::path ws = fs::weakly_canonical(g.ws().root(), ec);
  if (fs::weakly_canonical(into, ec) == ws) {
    return Status::InvalidArgument("--into must be another folder than the workspace the session was recorded in");
  }
  return Status::Ok();
}

// DIR as the checkout the session started from.
Status CheckOut(const Recording& r, const fs::path& into) {
  if (r.session.commit.empty()) {
    return Status::FailedPrecondition(
        "the session did not start in a git checkout (no commit recorded at its start): there is nothing to replay "
        "it from; sessions started in a git repository can be replayed");
  }
  // Anyone's file (an imported bundle's roster): a commit id, nothing git
  // could take for an option.
  const std::string& c = r.session.commit;
  if ((c.size() != 40 && c.size() != 64) ||
      !std::all_of(c.begin(), c.end(), [](char x) { return (x >= '0' && x <= '9') || (x >= 'a' && x <= 'f'); })) {
    return Status::Corrupt("the session's recorded commit is not a commit id: " + c.substr(0, 80));
  }
  MATES_RETURN_IF_ERROR(EnsureDir(into));
  git::Git parent(into.parent_path());
  auto cloned = parent.Ok({"clone", "--quiet", "--no-checkout", "--no-hardlinks", r.repo.string(), into.string()},
                          git::kGitTreeS);
  if (!cloned.ok()) return cloned.status().WithContext("cloning " + r.repo.string());
  auto at = git::Git(into).Ok({"checkout", "--quiet", "--detach", r.session.commit}, git::kGitTreeS);
  if (!at.ok()) {
    return at.status().WithContext("the session's commit " + r.session.commit + " is not in " + r.repo.string());
  }
  return Status::Ok();
}


// What the person said to the session's agents (messages and broadcasts
// as `user`, from the session's start on), in the order of the record.
std::vector<replay::PersonMessage> PersonsMessages(const Recording& r) {
  std::vector<replay::PersonMessage> out;
  for (const auto& t : r.teams) {
    (void)t.store->ReadLog(t.name, [&](const Message& m) {
      if (m.sender != kUserName || m.timestamp < r.session.started_at) return;
      if (m.type != MessageType::kMessage && m.type != MessageType::kBroadcast) return;
      out.push_back({m.timestamp, t.name, m.type == MessageType::kBroadcast ? "" : m.recipient, m.content, m.summary});
    });
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
  return out;
}

// Sends the person's message again, in DIR's store.
Status SendAgain(const Env& env, const fs::path& into, const replay::PersonMessage& m) {
  auto store = FileTeamStore(Workspace(into), env);
  std::unique_ptr<TeamMail> mail = store->Mail(m.team);
  SendRequest r;
  r.type = m.to.empty() ? MessageType::kBroadcast : MessageType::kMessage;
  r.sender = kUserName;
  r.recipient = m.to;
  r.content = m.content;
  r.summary = m.summary;
  return Messenger(*mail).Send(r).status();
}

// The session's options for DIR: the start team, its lead's first words,
// its worktree setting, the person's sandbox and hooks.
Result<host::SessionOptions> ReplayOptions(const Recording& r, const std::vector<replay::RecordedAgent>& agents,
                                           const fs::path& into, const std::string& sandbox,
                                           const agent::PriceTable& prices) {
  host::SessionOptions c;
  c.prices = prices;
  c.ws = Workspace(into);
  c.team = r.start_team;
  // A turn takes as many calls as its record did, and no limit cuts it
  // shorter; idle teammates wait (the recorded lead's shutdown, or the
  // session's end, stops them).
  size_t calls = 0;
  for (const auto& a : agents) calls = std::max(calls, a.calls.size());
  c.max_turns = static_cast<int>(std::max<size_t>(100, calls + 1));
  c.idle_timeout_s = 0;
  const TeamGit& git = r.teams[0].config.git;
  if (git.isolation == Isolation::kWorktree) {
    c.git.isolation = git.isolation;
    c.git.merge_check = git.merge_check;
    c.git.merge_timeout_s = git.merge_timeout_s;
    c.git.merge_review = git.merge_review;
    // The target as the session found it: made from its first commit
    // (a target of another name is made there too).
    if (git.target_branch != "mates/" + c.team && !git.target_branch.empty()) {
      c.git.target_branch = git.target_branch;
      MATES_RETURN_IF_ERROR(git::Git(into).Ok({"branch", "--", git.target_branch, "HEAD"}).status());
    }
    c.isolation_given = true;
    MATES_ASSIGN_OR_RETURN(c.git, git::PrepareTarget(c.ws, c.team, c.git));
  }
  MATES_RETURN_IF_ERROR(ChooseSandbox(c, sandbox));
  MATES_ASSIGN_OR_RETURN(c.hooks, ChooseHooks(c.ws));
  return c;
}

// The start team as the session found it, when it was there before (made
// by the person, with tasks on its board): made again in DIR, with the
// tasks made before the session, each as it stood then.
Status SetUpStart(const Recording& r, const Workspace& ws) {
  const RecordedTeam& t = r.teams[0];
  const double start = r.session.started_at;
  if (r.open_ended || t.config.created_at <= 0 || t.config.created_at >= start) return Status::Ok();
  MATES_RETURN_IF_ERROR(Roster(ws).CreateTeam(t.name, t.config.lead).status());
  MATES_ASSIGN_OR_RETURN(std::vector<Task> tasks, t.store->Board(t.name)->List(true));
  std::sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.id < b.id; });
  Board board(ws.TasksDir(t.name));
  for (const auto& task : tasks) {
    if (task.created_at >= start) continue;
    MATES_ASSIGN_OR_RETURN(Task made, board.Create({task.subject, task.description, task.active_form,
                                                    task.blocked_by, task.metadata_json, task.paths}));
    if (made.id != task.id) {
      return Status::FailedPrecondition("task #" + std::to_string(task.id) + " of team " + t.name +
                                        " could not be made again with its id (the board's ids have gaps)");
    }
    TaskPatch then;
    for (const auto& e : task.history) {
      if (e.at >= start) break;
      then.status = e.status;
      then.owner = e.owner;
    }
    if (then.status && (*then.status != TaskStatus::kPending || !then.owner->empty())) {
      MATES_RETURN_IF_ERROR(board.Update(task.id, then, Caller{"replay", true}).status());
    }
  }
  return Status::Ok();
}

// A team's board: live in `ws`, else its latest archive there.
std::vector<Task> BoardIn(const Env& env, const Workspace& ws, const std::string& team) {
  auto live = FileTeamStore(ws, env);
  if (live->LoadTeam(team).ok()) {
    auto tasks = live->Board(team)->List(false);
    if (tasks.ok()) return *tasks;
  }
  auto archives = ListArchives(ws, team);
  if (!archives.ok() || archives->empty()) return {};
  auto tasks = FileTeamStore(Workspace(archives->back().root), env)->Board(team)->List(false);
  return tasks.ok() ? *tasks : std::vector<Task>{};
}

std::string TaskWords(const Task& t) {
  return std::string(TaskStatusName(t.status)) + (t.owner.empty() ? "" : " by " + t.owner) + ": " + t.subject;
}

// How the replay's boards differ from the recorded ones, task by task.
std::vector<std::string> CompareBoards(const Env& env, const Recording& r, const fs::path& into, size_t* compared) {
  std::vector<std::string> diffs;
  for (const auto& t : r.teams) {
    auto recorded = t.store->Board(t.name)->List(false);
    if (!recorded.ok()) continue;
    std::vector<Task> replayed = BoardIn(env, Workspace(into), t.name);
    for (const auto& want : *recorded) {
      ++*compared;
      auto got = std::find_if(replayed.begin(), replayed.end(), [&](const Task& x) { return x.id == want.id; });
      if (got == replayed.end()) {
        diffs.push_back(t.name + " #" + std::to_string(want.id) + ": recorded " + TaskWords(want) + "; not made again");
      } else if (got->status != want.status || got->owner != want.owner || got->subject != want.subject) {
        diffs.push_back(t.name + " #" + std::to_string(want.id) + ": recorded " + TaskWords(want) + "; replayed " +
                        TaskWords(*got));
      }
    }
    for (const auto& extra : replayed) {
      bool known = std::any_of(recorded->begin(), recorded->end(), [&](const Task& x) { return x.id == extra.id; });
      if (!known) diffs.push_back(t.name + " #" + std::to_string(extra.id) + ": made only in the replay: " + TaskWords(extra));
    }
  }
  return diffs;
}

Json OutcomeJson(const replay::AgentOutcome& o) {
  Json j{{"name", o.name}, {"recorded_calls", o.recorded_calls}, {"replayed_calls", o.replayed_calls},
         {"diverged", o.divergence.has_value()}};
  if (o.divergence) {
    const auto& d = *o.divergence;
    j["divergence"] = Json{{"turn", d.turn}, {"call", d.call}, {"tool", d.tool}, {"what", d.what},
                           {"recorded", d.recorded}, {"replayed", d.replayed}};
  }
  return j;
}

void PrintOutcomes(const std::vector<replay::AgentOutcome>& outcomes, const std::vector<std::string>& board,
                   size_t tasks) {
  size_t width = 0;
  for (const auto& o : outcomes) width = std::max(width, o.name.size());
  for (const auto& o : outcomes) {
    std::cout << "  " << o.name << std::string(width - o.name.size() + 2, ' ') << o.replayed_calls << "/"
              << o.recorded_calls << " calls  ";
    if (!o.divergence) {
      std::cout << "no divergence\n";
      continue;
    }
    const auto& d = *o.divergence;
    std::cout << "diverged at turn " << d.turn << " (call " << d.call << ")"
              << (d.tool.empty() ? "" : ", " + d.tool) << ": " << d.what << "\n";
    if (!d.recorded.empty() || !d.replayed.empty()) {
      std::cout << "      then: " << d.recorded << "\n      now:  " << d.replayed << "\n";
    }
  }
  if (board.empty()) {
    std::cout << "  board: the same (" << tasks << " task" << (tasks == 1 ? "" : "s") << ")\n";
  } else {
    for (const auto& b : board) std::cout << "  board: " << b << "\n";
  }
}

// Each recorded session in turn, on its goal (the lead's first words from
// its start on), in DIR, all answered by `replayer`.
void RunSessions(Recording& rec, host::SessionOptions options, replay::Replayer& replayer) {
  host::SessionOutput out;
  out.say = [](const std::string& line) { std::cerr << "replay: " << line << "\n"; };
  for (size_t i = 0; i < rec.sessions.size(); ++i) {
    const TeamSession& s = rec.sessions[i];
    options.goal = replay::FirstWords(rec.teams[0].lead_journal, i == 0 ? 0 : s.started_at);
    const std::string which = "session " + std::to_string(i + 1) + " (" + s.how + ")";
    if (options.goal.empty()) {
      rec.notes.push_back(which + " gave the lead no words: not replayed");
      continue;
    }
    replayer.Until(i + 1 < rec.sessions.size() ? rec.sessions[i + 1].started_at : 1e300);
    const host::SessionResult r = host::Session::Run(options, &replayer, out);
    if (!r.status.ok()) rec.notes.push_back(which + " failed in the replay: " + r.status.message());
  }
}

int Replay(Globals& g, const ReplayArgs& a) {
  if (Status s = ValidateName("team name", g.team); !s.ok()) return Fail(s);
  if (Status s = CheckSeconds("--give-up", a.give_up, 0, false); !s.ok()) return Fail(s);
  const fs::path into = fs::absolute(a.into).lexically_normal();
  if (Status s = CheckInto(into, g); !s.ok()) return Fail(s);
  auto rec = FindRecording(g, a.archived);
  if (!rec.ok()) return Fail(rec.status());
  auto agents = ReadAgents(*rec, &rec->notes);
  if (!agents.ok()) return Fail(agents.status());
  if (Status s = CheckOut(*rec, into); !s.ok()) return Fail(s);
  if (Status s = SetUpStart(*rec, Workspace(into)); !s.ok()) return Fail(s.WithContext("setting up the session's start"));
  auto options = ReplayOptions(*rec, *agents, into, a.sandbox, g.price_table);
  if (!options.ok()) return Fail(options.status());
  replay::ReplayerOptions ro;
  ro.roots = {g.ws().root().string(), into.string()};
  for (const auto& t : rec->teams) ro.roots.push_back(t.root.string());
  ro.give_up_s = a.give_up;
  ro.person = PersonsMessages(*rec);
  ro.send = [&env = g.env(), into](const replay::PersonMessage& m) { return SendAgain(env, into, m); };
  auto replayer = std::make_shared<replay::Replayer>(std::move(*agents), ro);
  options->pacer = replayer;
  RunSessions(*rec, *options, *replayer);
  replayer->Finish();
  const auto outcomes = replayer->Outcomes();
  for (const auto& n : replayer->notes()) rec->notes.push_back(n);
  size_t tasks = 0;
  const auto board = CompareBoards(g.env(), *rec, into, &tasks);
  bool diverged = !board.empty();
  for (const auto& o : outcomes) diverged |= o.divergence.has_value();
  if (a.json) {
    Json j{{"team", rec->start_team}, {"into", into.string()}, {"commit", rec->session.commit},
           {"diverged", diverged}, {"board", board}, {"tasks_compared", tasks}, {"notes", rec->notes}};
    j["teams"] = Json::array();
    for (const auto& t : rec->teams) j["teams"].push_back(t.name);
    j["agents"] = Json::array();
    for (const auto& o : outcomes) j["agents"].push_back(OutcomeJson(o));
    std::cout << DumpJsonPretty(j) << std::endl;
  } else {
    std::string teams;
    for (const auto& t : rec->teams) teams += (teams.empty() ? "" : ", ") + t.name;
    std::cout << "replayed the session of team " << rec->start_team << " (teams " << teams << ") from commit "
              << rec->session.commit.substr(0, 12) << " in " << into.string() << "\n";
    PrintOutcomes(outcomes, board, tasks);
    for (const auto& n : rec->notes) std::cout << "  note: " << n << "\n";
    std::cout << (diverged ? "diverged" : "no divergence") << "\n";
  }
  return diverged ? kDiverged : 0;
}

}  // namespace

void AddReplayCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<ReplayArgs>();
  CLI::App* cmd = app.add_subcommand(
      "replay", "Re-enact a recorded session with no model in a fresh checkout, and say where each agent diverged");
  AddTeamOption(cmd, g);
  AddStoreOption(cmd, g);
  cmd->add_option("--into", a->into, "The folder to replay in (new or empty): a checkout of the session's first commit")
      ->required()
      ->type_name("DIR");
  cmd->add_flag("--json", a->json, "The outcome as one JSON document");
  cmd->add_option("--give-up", a->give_up,
                  "Seconds with nothing happening before the replay stops pacing (the agent it waited for diverged)")
      ->capture_default_str();
  AddSandboxOption(cmd, a->sandbox);
  AddArchivedOption(cmd, a->archived);
  cmd->callback([&g, a] { g.action = [&g, a] { return Replay(g, *a); }; });
}

}  // namespace mates::cli
