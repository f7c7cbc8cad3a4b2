#include "agent/spend.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "agent/activity.h"
#include "agent/journal.h"
#include "agent/usage.h"
#include "core/clock.h"
#include "core/json.h"

namespace mates::agent {

void PriceAgentUsage(AgentUsage* a, const PriceTable& prices) {
  a->cost_usd = 0;
  a->cost_known = true;
  for (const auto& [model, u] : a->by_model) {
    if (TotalTokens(u) == 0) continue;
    if (auto c = prices.Cost(model, u)) {
      a->cost_usd += *c;
    } else {
      a->cost_known = false;
    }
  }
}

void AddCliMembers(const std::vector<std::pair<std::string, std::string>>& activities, const PriceTable& prices,
                   TeamUsage* team) {
  for (const auto& entry : activities) {
    const std::string& name = entry.first;  // (clang 14 captures no structured binding)
    auto j = ParseJson(entry.second);
    auto act = j.ok() ? ActivityFromJson(*j) : Result<Activity>(j.status());
    if (!act.ok() || (act->usage_from.empty() && act->usage_unknown.empty())) continue;
    if (std::any_of(team->agents.begin(), team->agents.end(), [&](const AgentUsage& a) { return a.agent == name; })) {
      continue;
    }
    AgentUsage a;
    a.agent = name;
    a.from = act->usage_from;
    a.unknown = act->usage_unknown;
    if (a.unknown.empty()) {
      a.usage = act->tokens;
      a.calls = act->calls;
      a.by_model[act->model] = act->tokens;
      PriceAgentUsage(&a, prices);
      // The CLI's own figure where the price table has none (OpenCode's).
      if (!a.cost_known && act->cost_usd) a.cost_usd = *act->cost_usd, a.cost_known = true;
      team->total += a.usage;
      team->calls += a.calls;
      team->cost_usd += a.cost_usd;
      team->cost_known = team->cost_known && a.cost_known;
    }
    team->agents.push_back(std::move(a));
  }
  std::sort(team->agents.begin(), team->agents.end(),
            [](const AgentUsage& x, const AgentUsage& y) { return x.agent < y.agent; });
}

namespace {

// One agent's usage lines, priced, into `team` (none: nothing added).
void AddAgentUsage(const std::string& name, const JournalState& st, const PriceTable& prices, TeamUsage* team) {
  if (st.calls == 0) return;
  AgentUsage a;
  a.agent = name;
  a.usage = st.usage;
  a.calls = st.calls;
  a.by_model = st.usage_by_model;
  PriceAgentUsage(&a, prices);
  team->total += a.usage;
  team->calls += a.calls;
  team->cost_usd += a.cost_usd;
  team->cost_known = team->cost_known && a.cost_known;
  team->agents.push_back(std::move(a));
}

// Whose journal `stem` is, as usage shows it: "alice", "lead (subagents)",
// or "lead (earlier)" for a conversation set aside by --fresh
// ("lead.<time>"); "" for what is no journal (transcripts and the like).
std::string JournalOwner(const std::string& stem) {
  const size_t dot = stem.find('.');
  if (dot == std::string::npos) return stem;
  const std::string rest = stem.substr(dot + 1);
  if (rest == "subagents") return stem.substr(0, dot) + " (subagents)";
  if (rest == "mcp") return stem.substr(0, dot) + " (MCP sampling)";
  const bool stamp = !rest.empty() && std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
  return stamp ? stem.substr(0, dot) + " (earlier)" : "";
}

// The journals in `agents_dir`, by owner (JournalOwner), sorted; those
// `only_earlier` asks for: the conversations set aside.
Result<std::vector<std::pair<std::string, fs::path>>> JournalsIn(const fs::path& agents_dir, bool only_earlier) {
  std::vector<std::pair<std::string, fs::path>> files;
  std::error_code ec;
  if (!fs::is_directory(agents_dir, ec)) return files;
  for (fs::directory_iterator it(agents_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() != ".jsonl" || !it->is_regular_file(ec)) continue;
    std::string name = JournalOwner(p.stem().string());
    if (name.empty() || (only_earlier && name.find(" (earlier)") == std::string::npos)) continue;
    files.emplace_back(name, p);
  }
  if (ec) return Status::IOError("read " + agents_dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

// Adds each journal's usage lines to `team`, one entry per owner.
Status AddJournals(const std::vector<std::pair<std::string, fs::path>>& files, const PriceTable& prices,
                   TeamUsage* team) {
  for (const auto& file : files) {
    const std::string& name = file.first;  // (a name, not a binding: lambdas capture it)
    auto st = Journal::LoadUsage(file.second);
    if (!st.ok()) {
      if (st.status().code() == StatusCode::kNotFound) continue;  // deleted meanwhile
      return st.status();
    }
    auto same = std::find_if(team->agents.begin(), team->agents.end(),
                             [&](const AgentUsage& a) { return a.agent == name; });
    if (same == team->agents.end() || st->calls == 0) {
      AddAgentUsage(name, *st, prices, team);
      continue;
    }
    // A second conversation of the same owner: summed into its entry.
    team->cost_usd -= same->cost_usd;
    same->usage += st->usage;
    same->calls += st->calls;
    for (const auto& [model, u] : st->usage_by_model) same->by_model[model] += u;
    PriceAgentUsage(&*same, prices);
    team->total += st->usage;
    team->calls += st->calls;
    team->cost_usd += same->cost_usd;
    team->cost_known = team->cost_known && same->cost_known;
  }
  return Status::Ok();
}

}  // namespace

Result<TeamUsage> ReadTeamUsage(const fs::path& agents_dir, const PriceTable& prices) {
  TeamUsage team;
  MATES_ASSIGN_OR_RETURN(auto files, JournalsIn(agents_dir, false));
  MATES_RETURN_IF_ERROR(AddJournals(files, prices, &team));
  return team;
}

Result<std::optional<TeamUsage>> ReadTeamUsage(TeamStore& store, const std::string& team, const PriceTable& prices,
                                               const fs::path& agents_dir) {
  MATES_ASSIGN_OR_RETURN(TeamConfig config, store.LoadTeam(team));
  std::vector<std::string> names;
  for (const auto& m : config.members) names.push_back(m.name);
  std::sort(names.begin(), names.end());
  TeamUsage usage;
  // The journals' copies: each member's, and the lead's subagents' (kept
  // under the name its file has).
  auto usage_in_copy = [&](const std::string& member) -> Result<std::optional<JournalState>> {
    std::unique_ptr<JournalCopy> copy = store.JournalOf(team, member);
    if (!copy) return std::optional<JournalState>();
    MATES_ASSIGN_OR_RETURN(std::vector<std::string> lines, copy->Lines());
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    return std::optional<JournalState>(Journal::UsageOf(text));
  };
  for (const auto& name : names) {
    MATES_ASSIGN_OR_RETURN(std::optional<JournalState> st, usage_in_copy(name));
    if (!st) return std::optional<TeamUsage>();
    AddAgentUsage(name, *st, prices, &usage);
  }
  // The lead's servers' samplings (host/sampling.h): a copy, else this
  // machine's file.
  MATES_ASSIGN_OR_RETURN(std::optional<JournalState> sampled, usage_in_copy(config.lead + ".mcp"));
  if (sampled && sampled->calls > 0) {
    AddAgentUsage(config.lead + " (MCP sampling)", *sampled, prices, &usage);
  } else if (!agents_dir.empty()) {
    auto st = Journal::LoadUsage(agents_dir / (config.lead + ".mcp.jsonl"));
    if (st.ok()) AddAgentUsage(config.lead + " (MCP sampling)", *st, prices, &usage);
  }
  MATES_ASSIGN_OR_RETURN(std::optional<JournalState> subagents, usage_in_copy(config.lead + ".subagents"));
  if (subagents && subagents->calls > 0) {
    AddAgentUsage(config.lead + " (subagents)", *subagents, prices, &usage);
  } else if (!agents_dir.empty()) {
    // Written before copies were kept: this machine's file.
    auto st = Journal::LoadUsage(agents_dir / (config.lead + ".subagents.jsonl"));
    if (st.ok()) {
      AddAgentUsage(config.lead + " (subagents)", *st, prices, &usage);
    } else if (st.status().code() != StatusCode::kNotFound) {
      return st.status();
    }
  }
  if (!agents_dir.empty()) {
    // The conversations this machine set aside (--fresh): their copies
    // were replaced, their files stay.
    MATES_ASSIGN_OR_RETURN(auto earlier, JournalsIn(agents_dir, true));
    MATES_RETURN_IF_ERROR(AddJournals(earlier, prices, &usage));
  }
  return std::optional<TeamUsage>(std::move(usage));
}

std::string DescribeBudget(const TeamBudget& b, int64_t tokens, double usd) {
  auto part = [&](double used, double whole, const std::string& before, const std::string& made) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * used / whole);
    std::string out = std::string(" (") + pct + " used";
    if (!b.from.empty())
      out += ", " + before + " of it by team " + b.from + "'s session before this team was made";
    if (b.spent_in_made_tokens > 0) out += ", " + made + " of it in teams its sessions made";
    return out + ")";
  };
  std::string out;
  if (b.tokens > 0) {
    out += HumanCount(b.tokens) + " tokens" +
           part(static_cast<double>(tokens + b.counted_tokens()), static_cast<double>(b.tokens),
                HumanCount(b.spent_before_tokens), HumanCount(b.spent_in_made_tokens));
  }
  if (b.usd > 0) {
    out += (out.empty() ? "" : "; ") + FormatCost(b.usd) +
           part(usd + b.counted_usd(), b.usd, FormatCost(b.spent_before_usd),
                FormatCost(b.spent_in_made_usd));
  }
  return out;
}

double CacheReadShare(const llm::Usage& u) {
  int64_t in = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
  return in == 0 ? 0.0 : static_cast<double>(u.cache_read_input_tokens) / static_cast<double>(in);
}

std::string DescribeTeamUsage(const TeamUsage& u) {
  char share[32];
  std::snprintf(share, sizeof share, "%.0f%%", 100 * CacheReadShare(u.total));
  std::string out = std::to_string(u.calls) + (u.calls == 1 ? " call, " : " calls, ") +
                    HumanCount(TotalTokens(u.total)) + " tokens (" + share + " of the input from cache), ";
  if (u.cost_known) return out + FormatCost(u.cost_usd);
  if (u.cost_usd == 0) return out + "cost unknown";
  return out + FormatCost(u.cost_usd) + " + cost unknown for some models";
}

TeamSpend::TeamSpend(TeamBudget budget, const TeamUsage& before, const std::string& team, const PriceTable& prices)
    : budget_(std::move(budget)), team_(team), prices_(prices) {
  if (!budget_.from.empty() && (budget_.spent_before_tokens > 0 || budget_.spent_before_usd > 0)) {
    parts_.push_back(
        {"from team " + budget_.from, budget_.spent_before_tokens, budget_.spent_before_usd});
  }
  if (budget_.spent_in_made_tokens > 0) {
    parts_.push_back(
        {"in teams it made before", budget_.spent_in_made_tokens, budget_.spent_in_made_usd});
  }
  parts_.push_back({"in team " + team, TotalTokens(before.total), before.cost_usd});
  for (const Part& p : parts_) {
    tokens_ += p.tokens;
    usd_ += p.usd;
  }
}

void TeamSpend::Add(const std::string& team, const std::string& model, const llm::Usage& u) {
  auto cost = prices_.Cost(model, u);
  const std::string where = "in team " + (team.empty() ? team_ : team);
  std::lock_guard<std::mutex> lock(mu_);
  tokens_ += TotalTokens(u);
  if (cost) usd_ += *cost;
  auto part =
      std::find_if(parts_.begin(), parts_.end(), [&](const Part& p) { return p.where == where; });
  if (part == parts_.end()) part = parts_.insert(parts_.end(), Part{where});
  part->tokens += TotalTokens(u);
  if (cost) part->usd += *cost;
  if (!team.empty() && team != team_) {
    elsewhere_tokens_ += TotalTokens(u);
    if (cost) elsewhere_usd_ += *cost;
  }
}

std::pair<int64_t, double> TeamSpend::TakeSpentElsewhere() {
  std::lock_guard<std::mutex> lock(mu_);
  std::pair<int64_t, double> taken{elsewhere_tokens_, elsewhere_usd_};
  elsewhere_tokens_ = 0;
  elsewhere_usd_ = 0;
  return taken;
}

int64_t TeamSpend::tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tokens_;
}

double TeamSpend::usd() const {
  std::lock_guard<std::mutex> lock(mu_);
  return usd_;
}

TeamBudget TeamSpend::budget() const {
  std::lock_guard<std::mutex> lock(mu_);
  return budget_;
}

void TeamSpend::Follow(std::function<std::optional<TeamBudget>()> read, std::shared_ptr<Waker> changed) {
  read_ = std::move(read);
  changed_ = std::move(changed);
  std::lock_guard<std::mutex> lock(refresh_mu_);
  seen_ = changed_->generation();
}

void TeamSpend::Refresh() const {
  if (!changed_) return;
  std::lock_guard<std::mutex> refresh(refresh_mu_);
  const uint64_t now = changed_->generation();
  if (now == seen_) return;
  seen_ = now;
  std::optional<TeamBudget> b = read_();
  if (!b) return;  // unreadable this moment: the limits stay until the next change
  std::lock_guard<std::mutex> lock(mu_);
  budget_.tokens = b->tokens;
  budget_.usd = b->usd;
}

TeamBudget TeamSpend::ForNewTeam() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!budget_.any()) return {};  // nothing to share (one set later still binds this session's agents)
  TeamBudget b;
  b.tokens = budget_.tokens;
  b.usd = budget_.usd;
  b.from = team_;
  b.spent_before_tokens = tokens_;
  b.spent_before_usd = usd_;
  return b;
}

std::string TeamSpend::PartsLocked(bool in_usd) const {
  std::string out;
  int places = 0;
  for (const Part& p : parts_) {
    if (p.tokens == 0) continue;
    out += places++ == 0 ? ": " : ", ";
    out += (in_usd ? FormatCost(p.usd) : HumanCount(p.tokens)) + " " + p.where;
  }
  // One place alone says nothing the total does not.
  return places > 1 ? out : "";
}

void TeamSpend::Share(SpentEverywhere everywhere) {
  everywhere_ = std::move(everywhere);
  std::optional<std::pair<int64_t, double>> now = everywhere_();
  if (!now) return;
  std::lock_guard<std::mutex> lock(mu_);
  beside_tokens_ = std::max<int64_t>(0, tokens_ - now->first);
  beside_usd_ = std::max(0.0, usd_ - now->second);
}

std::string TeamSpend::Exceeded() const {
  Refresh();
  // The store is asked outside mu_ (a round trip), and only under a limit.
  std::optional<std::pair<int64_t, double>> everywhere;
  if (everywhere_ && budget().any()) everywhere = everywhere_();
  std::lock_guard<std::mutex> lock(mu_);
  int64_t tokens = tokens_;
  double usd = usd_;
  bool all_hosts = false;  // the store's count is the larger
  if (everywhere && everywhere->first + beside_tokens_ > tokens) {
    tokens = everywhere->first + beside_tokens_;
    all_hosts = true;
  }
  if (everywhere && everywhere->second + beside_usd_ > usd) {
    usd = everywhere->second + beside_usd_;
    all_hosts = true;
  }
  const auto where = [&](bool in_usd) { return all_hosts ? " by the team on every machine" : PartsLocked(in_usd); };
  if (budget_.tokens > 0 && tokens >= budget_.tokens) {
    return "the team's budget of " + HumanCount(budget_.tokens) + " tokens is spent (" + HumanCount(tokens) +
           " used" + where(false) + ")";
  }
  if (budget_.usd > 0 && usd >= budget_.usd) {
    return "the team's budget of " + FormatCost(budget_.usd) + " is spent (" + FormatCost(usd) + " used" +
           where(true) + ")";
  }
  return "";
}

std::pair<int64_t, double> PriceSpent(const std::vector<ModelSpend>& spent, const PriceTable& prices) {
  std::pair<int64_t, double> out{0, 0.0};
  for (const ModelSpend& m : spent) {
    llm::Usage u;
    u.input_tokens = m.input;
    u.output_tokens = m.output;
    u.cache_creation_input_tokens = m.cache_write;
    u.cache_read_input_tokens = m.cache_read;
    out.first += TotalTokens(u);
    if (auto cost = prices.Cost(m.model, u)) out.second += *cost;
  }
  return out;
}

Result<TeamUsage> TeamUsageOf(TeamStore& store, const std::string& team, const fs::path& agents_dir,
                              const PriceTable& prices) {
  MATES_ASSIGN_OR_RETURN(std::optional<TeamUsage> copies, ReadTeamUsage(store, team, prices, agents_dir));
  TeamUsage u;
  if (copies) {
    u = std::move(*copies);
  } else {
    MATES_ASSIGN_OR_RETURN(u, ReadTeamUsage(agents_dir, prices));
  }
  if (auto activities = store.Activities(team); activities.ok()) AddCliMembers(*activities, prices, &u);
  return u;
}

Json TaskWork(TeamStore& store, const std::string& team, int64_t task, const std::string& owner,
              const PriceTable& prices) {
  constexpr size_t kMaxJournal = size_t{64} << 20;
  auto t = store.Board(team)->Get(task);
  if (!t.ok()) return Json();
  auto text = store.ReadJournal(team, owner, kMaxJournal);
  if (!text.ok() || text->too_large) return Json();
  const Journal::Spend spend = Journal::SpendWithin(text->text, WorkWindows(*t, owner, WallSeconds() + 1), prices);
  Json models = Json::array();
  for (const auto& m : spend.models) models.push_back(m);
  return {{"models", std::move(models)},
          {"usage", llm::UsageToJson(spend.usage)},
          {"calls", spend.calls},
          {"cost_usd", spend.cost_usd ? Json(*spend.cost_usd) : Json()}};
}

}  // namespace mates::agent
