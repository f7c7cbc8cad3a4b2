#include "git/forecast.h"

#include <stdlib.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/guarded.h"
#include "core/json.h"
#include "core/log.h"
#include "core/text.h"
#include "git/git.h"
#include "git/merge_tree.h"
#include "git/worktrees.h"
#include "store/board.h"
#include "store/messenger.h"
#include "store/roster.h"

namespace mates::git {

namespace {

// A forecast's files in a line: the first eight.
std::string Join(const std::vector<std::string>& v) { return JoinWords(v, ", ", 8); }

std::string KeyOf(const ConflictForecast& f) {
  std::string k = f.with_target ? "target" : "";
  for (const auto& m : f.members) k += "\n" + m;
  return k;
}

std::string TaskWords(const ConflictForecast& f, size_t i) {
  return i < f.tasks.size() && f.tasks[i] > 0 ? "task #" + std::to_string(f.tasks[i]) : "its work";
}

}  // namespace

Forecaster::Forecaster(TeamStore& store, Options options)
    : options_(std::move(options)), store_(&store), follow_(options_.team) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec || base.empty()) base = "/tmp";
  std::string dir = (base / "mates-forecast-XXXXXX").string();
  if (::mkdtemp(dir.data()) != nullptr) index_dir_ = dir;
  thread_ = std::thread([this] {
    NameThisThread("mates-forecast");
    RunGuarded("the conflict forecast", [this] { Main(); });
  });
}

Forecaster::~Forecaster() { Stop(); }

void Forecaster::Stop() {
  stop_.store(true);
  waker_->Notify();
  if (thread_.joinable()) thread_.join();
  if (!written_team_.empty() && !current_.empty()) (void)store_->PutForecasts(written_team_, {});
  current_.clear();
  std::error_code ec;
  if (!index_dir_.empty()) fs::remove_all(index_dir_, ec);
}

void Forecaster::Follow(std::function<std::string()> team) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    follow_ = std::move(team);
  }
  waker_->Notify();
}

void Forecaster::Changed(const std::string& team, const std::string& member) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed_.insert({team, member});
  }
  waker_->Notify();
}

void Forecaster::Landed(const std::string& team, const std::string& member) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    landed_.insert({team, member});
  }
  waker_->Notify();
}

void Forecaster::Take(const std::string& team, std::set<std::string>* changed, std::set<std::string>* landed) {
  // What is another team's is dropped: the team it was for is not served.
  for (const auto& [t, m] : changed_) {
    if (t == team) changed->insert(m);
  }
  for (const auto& [t, m] : landed_) {
    if (t == team) landed->insert(m);
  }
  changed_.clear();
  landed_.clear();
}

void Forecaster::Main() {
  while (!stop_.load()) {
    std::function<std::string()> follow;
    {
      std::lock_guard<std::mutex> lock(mu_);
      follow = follow_;
    }
    uint64_t g = waker_->generation();
    if (options_.serving && !options_.serving()) {
      StandAside();
      waker_->WaitChange(g, DeadlineIn(options_.pane_look_s));
      continue;
    }
    const std::string team = follow ? follow() : "";
    std::set<std::string> changed, landed;
    const bool panes = options_.panes && !team.empty() && LookAtPanes(team, &changed);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (team != team_) {
        // A new team: what was forecast for the old one goes with it.
        team_ = team;
        snapshots_.clear();
        merged_.clear();
        if (!written_team_.empty() && !current_.empty()) (void)store_->PutForecasts(written_team_, {});
        current_.clear();
        written_team_ = team;
      }
      Take(team, &changed, &landed);
    }
    if (team.empty() || (changed.empty() && landed.empty())) {
      waker_->WaitChange(g, DeadlineIn(team.empty() ? 0.5 : panes ? options_.pane_look_s : 2.0));
      continue;
    }
    // Let a burst of changes settle into one pass.
    (void)Clock::Real().Sleep(options_.settle_s, nullptr);
    {
      std::lock_guard<std::mutex> lock(mu_);
      Take(team, &changed, &landed);
    }
    Pass(team, std::move(changed), std::move(landed));
    passes_.fetch_add(1);
  }
}

void Forecaster::StandAside() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed_.clear();
    landed_.clear();
    team_.clear();
  }
  snapshots_.clear();
  merged_.clear();
  pane_seen_.clear();
  current_.clear();
  written_team_.clear();
}

bool Forecaster::LookAtPanes(const std::string& team, std::set<std::string>* changed) {
  auto cfg = store_->LoadTeam(team);
  if (!cfg.ok() || !cfg->git.configured()) return false;
  std::vector<std::string> panes;
  for (const auto& m : cfg->members) {
    if (m.role != MemberRole::kLead && m.backend == MemberBackend::kTmux && m.worktree) panes.push_back(m.name);
  }
  if (panes.empty()) {
    pane_seen_.clear();
    return false;
  }
  // What each is doing, as its router writes it (agent/activity.h): a
  // state other than idle works; a new `since` has worked meanwhile.
  std::map<std::string, std::pair<std::string, std::string>> doing;
  if (auto docs = store_->Activities(team); docs.ok()) {
    for (const auto& [member, doc] : *docs) {
      auto j = ParseJson(doc);
      if (!j.ok() || !j->is_object()) continue;
      const auto since = j->find("since");
      doing[member] = {StringOr(*j, "state"), since != j->end() && since->is_number() ? DumpJson(*since) : ""};
    }
  }
  for (const auto& name : panes) {
    const auto& [state, since] = doing[name];
    const std::string seen = state + "@" + since;
    if (state != "idle" || pane_seen_[name] != seen) changed->insert(name);
    pane_seen_[name] = seen;
  }
  return true;
}

void Forecaster::Pass(const std::string& team, std::set<std::string> changed, std::set<std::string> landed) {
  auto cfg = store_->LoadTeam(team);
  if (!cfg.ok() || !cfg->git.configured()) return;
  const TeamGit& tg = cfg->git;
  const Workspace& ws = options_.ws;
  // The target as this workspace knows it (a team with a remote fetches it
  // when its queue merges: a forecast does not add a fetch per change).
  Git w(ws.root());
  auto target = ResolveCommit(w, tg.target_ref());
  if (!target.ok() || target->empty()) return;
  TakeSnapshots(team, *cfg, changed, landed);
  // Each member's task in progress, to name.
  std::map<std::string, int64_t> task_of;
  if (auto tasks = store_->Board(team)->List(false); tasks.ok()) {
    for (const auto& t : *tasks) {
      if (t.status == TaskStatus::kInProgress && !t.owner.empty() && task_of.count(t.owner) == 0) task_of[t.owner] = t.id;
    }
  }
  // What does not merge: pairs merged again only when a side moved.
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> merged;
  auto conflicts = [&](const std::string& key, const std::string& a, const std::string& b) {
    const std::string both = a + " " + b;
    if (auto it = merged_.find(key); it != merged_.end() && it->second.first == both) {
      merged[key] = it->second;
      return merged[key].second;
    }
    std::vector<std::string> files;
    if (auto tm = MergeTree(w, a, b); tm.ok() && !tm->clean) files = tm->conflicts;
    merged[key] = {both, files};
    return files;
  };
  std::vector<ConflictForecast> now;
  for (const auto& [m, snap] : snapshots_) {
    auto files = conflicts("target\n" + m, *target, snap);
    if (files.empty()) continue;
    ConflictForecast f;
    f.members = {m};
    f.tasks = {task_of.count(m) ? task_of[m] : 0};
    f.files = std::move(files);
    f.with_target = true;
    now.push_back(std::move(f));
  }
  for (auto a = snapshots_.begin(); a != snapshots_.end(); ++a) {
    for (auto b = std::next(a); b != snapshots_.end(); ++b) {
      auto files = conflicts("\n" + a->first + "\n" + b->first, a->second, b->second);
      if (files.empty()) continue;
      ConflictForecast f;
      f.members = {a->first, b->first};
      f.tasks = {task_of.count(a->first) ? task_of[a->first] : 0, task_of.count(b->first) ? task_of[b->first] : 0};
      f.files = std::move(files);
      now.push_back(std::move(f));
    }
  }
  merged_ = std::move(merged);
  Publish(team, std::move(now));
}

// The changed members' worktrees snapshotted anew (those landed, or with
// nothing of their own, leave the flight).
void Forecaster::TakeSnapshots(const std::string& team, const TeamConfig& cfg, const std::set<std::string>& changed,
                               const std::set<std::string>& landed) {
  for (const auto& m : landed) snapshots_.erase(m);
  for (const auto& m : changed) {
    const Member* member = cfg.Find(m);
    if (member == nullptr || !member->worktree || index_dir_.empty()) {
      snapshots_.erase(m);
      continue;
    }
    auto snap = SnapshotTeammateWork(options_.ws, team, m, fs::path(index_dir_) / (team + "." + m + ".index"));
    if (!snap.ok()) {
      LogDebug("conflict forecast: " + m + "'s worktree: " + snap.status().message());
      continue;
    }
    if (snap->empty()) {
      snapshots_.erase(m);
    } else {
      snapshots_[m] = *snap;
    }
  }
}

// New forecasts (or new files) are told; those already known keep their
// time; the file is written when anything differs.
void Forecaster::Publish(const std::string& team, std::vector<ConflictForecast> now) {
  std::map<std::string, const ConflictForecast*> before;
  for (const auto& f : current_) before[KeyOf(f)] = &f;
  bool differs = now.size() != current_.size();
  const double at = WallSeconds();
  for (auto& f : now) {
    auto it = before.find(KeyOf(f));
    if (it != before.end() && it->second->files == f.files && it->second->tasks == f.tasks) {
      f.since = it->second->since;
      continue;
    }
    f.since = it != before.end() ? it->second->since : at;
    differs = true;
    if (it == before.end() || it->second->files != f.files) Tell(team, f);
  }
  if (!differs) return;
  current_ = std::move(now);
  written_team_ = team;
  if (Status s = store_->PutForecasts(team, current_); !s.ok()) LogWarning("conflict forecast: " + s.message());
  if (options_.on_change) options_.on_change();
}

void Forecaster::Tell(const std::string& team, const ConflictForecast& f) {
  auto cfg = store_->LoadTeam(team);
  const std::string target = cfg.ok() ? cfg->git.target_name() : "the target";
  const std::string files = Join(f.files);
  std::unique_ptr<TeamMail> mail = store_->Mail(team);
  auto send = [&](const std::string& to, const std::string& text) {
    SendRequest s;
    s.sender = kMergeQueueName;
    s.recipient = to;
    s.content = text;
    s.summary = "conflict forecast: " + files;
    if (auto sent = Messenger(*mail).Send(s); !sent.ok()) {
      LogWarning("conflict forecast: telling " + to + ": " + sent.status().message());
    }
  };
  if (f.with_target) {
    send(f.members[0], "Conflict forecast: your " + TaskWords(f, 0) + " changes " + files + ", which " + target +
                           " has changed too since you started: it will not merge as it stands. Merge " + target +
                           " into your worktree now (git merge " + target + "), resolve, and go on from there.");
    if (options_.tell_lead) {
      options_.tell_lead("Conflict forecast: " + f.members[0] + "'s " + TaskWords(f, 0) + " conflicts with " + target +
                         " in " + files + " (" + f.members[0] + " was told).");
    }
    return;
  }
  for (size_t i = 0; i < 2; ++i) {
    const size_t other = 1 - i;
    send(f.members[i], "Conflict forecast: your " + TaskWords(f, i) + " and " + f.members[other] + "'s " +
                           TaskWords(f, other) + " both change " + files +
                           " — the two will not merge as they stand. Agree with " + f.members[other] +
                           " (SendMessage) who changes what, or leave those lines to the one whose work lands "
                           "first and merge " + target + " after it.");
  }
  if (options_.tell_lead) {
    options_.tell_lead("Conflict forecast: " + f.members[0] + "'s " + TaskWords(f, 0) + " and " + f.members[1] + "'s " +
                       TaskWords(f, 1) + " both change " + files +
                       " and will not merge as they stand (both were told). Reassign or sequence them if needed.");
  }
}

}  // namespace mates::git
