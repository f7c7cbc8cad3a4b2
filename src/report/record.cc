// The report's record: read from the store once (see report.h).
#include <algorithm>
#include <cmath>
#include <deque>
#include <nlohmann/json.hpp>
#include <set>

#include "agent/journal.h"
#include "agent/prices.h"
#include "agent/spend.h"
#include "agent/usage.h"
#include "core/clock.h"
#include "core/files.h"
#include "core/text.h"
#include "report/report.h"
#include "store/forecast.h"
#include "store/messenger.h"

namespace mates::report {
namespace {

constexpr size_t kLogPageBytes = 4 << 20;
constexpr size_t kSample = 240;  // a failure's words from the record, at most

std::string Cut(std::string_view s, size_t max = kSample) {
  std::string one(s.substr(0, std::min(s.size(), max * 4)));
  for (char& c : one) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return CutUtf8(one, max);
}

// A time of the record, or 0 when it is none a clock could have written
// (a hand may have written 1e57): the timeline is not stretched by it.
// Counts `f` in its class, and keeps it to be listed while there are few
// enough (a record written to flood the report costs no memory for it).
void AddFailure(Report* r, Failure f) {
  r->failure_counts[f.kind] += f.count;
  if (r->failures.size() < 4 * kMaxListed) r->failures.push_back(std::move(f));
  else ++r->failures_dropped;
}

double Time(double t) { return std::isfinite(t) && t > 0 && t < 1e11 ? t : 0; }

double Number(const Json& o, const char* key) {
  const Json& v = FieldOr(o, key);
  return v.is_number() ? Time(v.get<double>()) : 0;
}

// One agent's journal, line by line: its counts, its failed tool calls
// (folded per tool), the turns that ended otherwise than by the model's
// choice.
class JournalReader {
 public:
  JournalReader(AgentReport* agent, Report* report) : a_(agent), r_(report) {}

  void Line(std::string_view text, size_t n) {
    auto parsed = ParseJson(text);
    if (!parsed.ok() || !parsed->is_object()) {
      ++unreadable_;
      return;
    }
    const Json& j = *parsed;
    const std::string kind = StringOr(j, "kind");
    if (const double ts = Number(j, "ts"); ts > 0) {
      if (a_->first == 0 || ts < a_->first) a_->first = ts;
      a_->last = std::max(a_->last, ts);
      at_ = ts;
    }
    if (kind == "usage") {
      if (std::string m = StringOr(j, "model"); !m.empty() && m.size() <= 200) a_->model = m;
      if (at_ > 0) CallAt(at_);
    } else if (kind == "compact") {
      ++a_->compactions;
    } else if (kind == "turn_end") {
      TurnEnd(j, n);
    } else if (kind == "message") {
      Message(FieldOr(j, "message"), n);
    }
  }

  // The failed calls, a failure per tool; what could not be read, noted.
  void Finish(bool torn) {
    for (const auto& [tool, e] : errors_) {
      AddFailure(r_, {FailureClass::kTooling, e.first, a_->name, 0,
                              std::to_string(e.count) + " failed call" + (e.count == 1 ? "" : "s") + " of " +
                                  tool + "; the first: " + e.sample,
                              Where(e.line), e.count});
    }
    if (unreadable_ > 0) {
      r_->notes.push_back(a_->name + "'s journal has " + std::to_string(unreadable_) +
                          " line(s) that are not JSON objects (edited by hand, or damaged): left out");
    }
    if (torn) r_->notes.push_back(a_->name + "'s journal ends in a cut line (a write a crash interrupted): left out");
  }

 private:
  struct ToolErrors {
    int count = 0;
    double first = 0;
    size_t line = 0;
    std::string sample;
  };

  // Every other time kept once there are too many: an even pick.
  void CallAt(double t) {
    if (++calls_ % stride_ != 0) return;
    a_->call_times.push_back(t);
    if (a_->call_times.size() < kMaxCallTimes) return;
    std::vector<double> half;
    for (size_t i = 1; i < a_->call_times.size(); i += 2) half.push_back(a_->call_times[i]);
    a_->call_times = std::move(half);
    stride_ *= 2;
  }

  std::string Where(size_t line) const { return a_->name + "'s journal, line " + std::to_string(line); }

  void TurnEnd(const Json& j, size_t n) {
    const std::string end = StringOr(j, "end"), why = Cut(StringOr(j, "why"));
    auto fail = [&](FailureClass c, const std::string& what) {
      AddFailure(r_, {c, at_, a_->name, 0, what, Where(n), 1});
    };
    if (end == "failed" && StringOr(j, "in") == "model") {
      fail(FailureClass::kProvider, "its model call failed: " + why);
    } else if (end == "failed") {
      fail(FailureClass::kTooling, "its turn failed: " + why);
    } else if (end == "budget") {
      fail(FailureClass::kBudget, "no further model calls: " + why);
    } else if (end == "breaker") {
      fail(FailureClass::kSpecification, why.empty() ? "paused by a circuit breaker" : why);
    } else if (end == "max_calls") {
      fail(FailureClass::kSpecification, "its turn hit the limit of model calls (going round in circles?)");
    } else if (end == "refusal") {
      fail(FailureClass::kProvider, "the model refused" + (why.empty() ? "" : ": " + why));
    } else if (end == "interrupted") {
      r_->decisions.push_back({at_, "", a_->name + "'s turn was interrupted"});
    }
  }

  void Message(const Json& m, size_t n) {
    const bool user = StringOr(m, "role") == "user";
    const Json& content = FieldOr(m, "content");
    if (content.is_string()) {
      if (user) ++a_->turns;
      return;
    }
    if (!content.is_array()) return;
    bool input = false;
    for (const auto& b : content) {
      const std::string type = StringOr(b, "type");
      if (type == "text" && user) {
        input = true;
      } else if (type == "tool_use") {
        const std::string name = Cut(StringOr(b, "name"), 64);
        ++a_->tool_calls;
        ++a_->tools[name.empty() ? "?" : name];
        if (tool_of_.size() < 100000) tool_of_[StringOr(b, "id")] = name.empty() ? "?" : name;
      } else if (type == "tool_result" && FieldOr(b, "is_error").is_boolean() && FieldOr(b, "is_error").get<bool>()) {
        ++a_->tool_errors;
        auto tool = tool_of_.find(StringOr(b, "tool_use_id"));
        ToolErrors& e = errors_[tool == tool_of_.end() ? "a tool" : tool->second];
        if (e.count++ == 0) {
          e.first = at_;
          e.line = n;
          e.sample = Cut(agent::ToolResultText(FieldOr(b, "content")));
        }
      }
    }
    if (input) ++a_->turns;
  }

  AgentReport* a_;
  Report* r_;
  double at_ = 0;  // the time of the latest line that had one
  size_t calls_ = 0, stride_ = 1;
  size_t unreadable_ = 0;
  std::map<std::string, std::string> tool_of_;  // tool_use id → tool name
  std::map<std::string, ToolErrors> errors_;    // tool name → its failed calls
};

// Reads `name`'s journal into `a`; returns its text (for the tasks' spend).
Result<std::string> ReadAgent(TeamStore& store, const std::string& team, AgentReport* a, Report* r) {
  auto j = store.ReadJournal(team, a->name, kMaxJournalBytes);
  if (!j.ok()) {
    if (j.status().code() == StatusCode::kNotFound) return std::string();
    if (j.status().code() == StatusCode::kUnavailable) return j.status();
    r->notes.push_back(a->name + "'s journal could not be read: " + j.status().message());
    return std::string();
  }
  if (j->too_large) {
    r->notes.push_back(a->name + "'s journal is over " + std::to_string(kMaxJournalBytes >> 20) +
                       " MiB (" + j->where + "): its turns, tool calls and failures are not in this report");
    return std::string();
  }
  JournalReader reader(a, r);
  size_t n = 0, at = 0;
  for (size_t nl; (nl = j->text.find('\n', at)) != std::string::npos; at = nl + 1) {
    ++n;
    if (nl > at) reader.Line(std::string_view(j->text).substr(at, nl - at), n);
  }
  reader.Finish(at < j->text.size());
  const agent::JournalState st = agent::Journal::ReplayText(j->text, a->name + "'s journal");
  if (st.problem) {
    r->notes.push_back(a->name + "'s journal, line " + std::to_string(st.problem->line) + ": " +
                       st.problem->what + " — a resumed " + a->name + " goes on from the line before it");
  }
  return std::move(j->text);
}

void Span(Report* r, double t) {
  if (Time(t) == 0) return;
  if (r->started == 0 || t < r->started) r->started = t;
  r->ended = std::max(r->ended, t);
}

// Every message of the log, in pages: the flow counted, the last ones
// kept, the person's words among the decisions.
Status ReadMessages(TeamStore& store, const std::string& team, Report* r) {
  std::deque<Message> last;
  uint64_t cursor = 0;
  for (;;) {
    MATES_ASSIGN_OR_RETURN(LogPage page, store.LogAfter(team, cursor, kLogPageBytes));
    for (auto& m : page.messages) {
      ++r->messages_total;
      std::pair<std::string, std::string> pair = {m.sender, m.type == MessageType::kBroadcast ? "*" : m.recipient};
      if (r->flow.size() >= kMaxFlowPairs && r->flow.count(pair) == 0) pair = {"(others)", "(others)"};
      ++r->flow[pair];
      ++r->message_types[std::string(MessageTypeName(m.type))];
      Span(r, m.timestamp);
      if (m.sender == kUserName && r->decisions.size() <= kMaxListed) {
        r->decisions.push_back({m.timestamp, kUserName, "wrote to " + m.recipient + ": " + Cut(m.content)});
      }
      last.push_back(std::move(m));
      if (last.size() > kMaxListedMessages) last.pop_front();
    }
    if (page.next == cursor || page.messages.empty()) break;
    cursor = page.next;
  }
  r->messages.assign(last.begin(), last.end());
  if (r->messages_total > r->messages.size()) {
    r->notes.push_back("the message list shows the last " + std::to_string(r->messages.size()) + " of " +
                       std::to_string(r->messages_total) + " messages (the flow counts them all)");
  }
  return Status::Ok();
}

// The merges' failures and decisions.
void ReadMerges(const std::vector<MergeRequest>& merges, Report* r) {
  for (const auto& m : merges) {
    Span(r, m.created_at);
    Span(r, m.updated_at);
    const std::string which = "merge request " + std::to_string(m.id) + " (" + TaskRef(m.task) + ", " + m.owner + ")";
    const std::string where = "merge request " + std::to_string(m.id);
    auto fail = [&](FailureClass c, const std::string& what) {
      AddFailure(r, {c, m.updated_at, m.owner, m.task, which + " " + what, where, 1});
    };
    if (m.status == MergeState::kConflict) {
      fail(FailureClass::kCoordination, "conflicted with the target in " + JoinWords(m.files, ", ", 8) +
                                            "; bounced to its owner");
    } else if (m.status == MergeState::kFailed) {
      auto failed = std::find_if(m.checks.rbegin(), m.checks.rend(),
                                 [](const CheckRun& c) { return c.exit_code != 0 || c.signal != 0 || c.timed_out; });
      if (failed != m.checks.rend()) {
        fail(FailureClass::kVerification,
             "failed its check `" + Cut(failed->command, 120) + "` (" +
                 (failed->timed_out ? std::string("timed out")
                                    : failed->signal != 0 ? "killed by signal " + std::to_string(failed->signal)
                                                          : "exit " + std::to_string(failed->exit_code)) +
                 ")");
      } else {
        fail(FailureClass::kTooling, "could not be merged: " + Cut(m.output));
      }
    } else if (m.status == MergeState::kRejected) {
      fail(FailureClass::kVerification, "was rejected by " + (m.decided_by.empty() ? "a reviewer" : m.decided_by) +
                                            (m.feedback.empty() ? "" : ": " + Cut(m.feedback)));
    }
    if (!m.decided_by.empty()) {
      r->decisions.push_back({m.updated_at, m.decided_by,
                              std::string(m.status == MergeState::kRejected ? "rejected " : "approved ") + which});
    }
  }
}

// The protocol's failures (a plan rejected, a shutdown declined) and the
// person's answers.
void ReadRequests(const std::vector<ProtocolRequest>& requests, Report* r) {
  for (const auto& q : requests) {
    Span(r, q.created_at);
    Span(r, q.resolved_at);
    const std::string where = std::string(RequestKindName(q.kind)) + " request " + q.id;
    const std::string answer = q.response.empty() ? "" : ": " + Cut(q.response);
    if (q.status == RequestState::kRejected && q.kind == RequestKind::kPlanApproval) {
      AddFailure(r, {FailureClass::kSpecification, q.resolved_at, q.requester, 0,
                             q.requester + "'s plan was rejected by " + q.responder + answer, where, 1});
    } else if (q.status == RequestState::kRejected && q.kind == RequestKind::kShutdown) {
      AddFailure(r, {FailureClass::kCoordination, q.resolved_at, q.responder, 0,
                             q.responder + " declined to shut down when " + q.requester + " asked" + answer, where, 1});
    }
    if (q.kind == RequestKind::kPlanApproval && q.responder != kUserName && q.status != RequestState::kPending) {
      r->decisions.push_back({q.resolved_at, q.responder,
                              std::string(q.status == RequestState::kApproved ? "approved " : "rejected ") +
                                  q.requester + "'s plan" + answer});
    }
    if (q.responder == kUserName && q.status != RequestState::kPending) {
      const bool yes = q.status == RequestState::kApproved;
      std::string what = q.kind == RequestKind::kPlanApproval ? (yes ? "approved " : "rejected ") + q.requester + "'s plan"
                         : q.kind == RequestKind::kElicitation ? (yes ? "answered " : "declined ") + q.requester + "'s question"
                                                               : (yes ? "agreed to shut down" : "declined to shut down");
      r->decisions.push_back({q.resolved_at, kUserName, what + answer});
    }
  }
}

// Each task's bars (who held it when) and spend (its holders' model calls
// meanwhile), from its history and the journals.
void ReadTasks(std::vector<Task> tasks, const std::map<std::string, std::string>& journals,
               const agent::PriceTable& prices, Report* r) {
  const double until = r->ended;
  for (auto& t : tasks) {
    TaskReport tr;
    for (const auto& e : t.history) {
      if (!e.owner.empty() && std::find(tr.owners.begin(), tr.owners.end(), e.owner) == tr.owners.end()) {
        tr.owners.push_back(e.owner);
      }
    }
    if (!t.owner.empty() && std::find(tr.owners.begin(), tr.owners.end(), t.owner) == tr.owners.end()) {
      tr.owners.push_back(t.owner);
    }
    for (const auto& owner : tr.owners) {
      const auto windows = WorkWindows(t, owner, until);
      for (const auto& [from, to] : windows) {
        const bool open = t.status == TaskStatus::kInProgress && t.owner == owner && to >= until;
        r->bars.push_back({owner, t.id, from, std::max(to, from), open});
      }
      auto text = journals.find(owner);
      if (text == journals.end() || text->second.empty()) continue;
      const agent::Journal::Spend spend = agent::Journal::SpendWithin(text->second, windows, prices);
      tr.calls += spend.calls;
      tr.usage += spend.usage;
      tr.cost_usd = tr.cost_usd && spend.cost_usd ? std::optional<double>(*tr.cost_usd + *spend.cost_usd) : std::nullopt;
    }
    tr.task = std::move(t);
    r->tasks.push_back(std::move(tr));
  }
  std::sort(r->bars.begin(), r->bars.end(), [](const Bar& a, const Bar& b) { return a.from < b.from; });
}

// What the record shows beside the journals and the merges: conflicts
// foreseen, inbox lines set aside, work left with a member that is gone,
// a budget spent.
void ReadTheRest(const Workspace& ws, const TeamConfig& team, Report* r) {
  for (const auto& f : ReadForecasts(ws, team.name)) {
    AddFailure(r, {FailureClass::kCoordination, f.since, JoinWords(f.members, " and "), f.tasks.empty() ? 0 : f.tasks[0],
                           "a conflict is forecast " + std::string(f.with_target ? "with the target" : "between them") +
                               " in " + JoinWords(f.files, ", ", 8),
                           "forecast.json", 1});
  }
  for (const auto& m : team.members) {
    auto q = ReadFilePrefix(ws.TeamDir(team.name) / (m.name + "_inbox.quarantine"), 1 << 20);
    if (!q.ok() || q->empty()) continue;
    const auto lines = std::count(q->begin(), q->end(), '\n');
    AddFailure(r, {FailureClass::kCoordination, 0, m.name, 0,
                           std::to_string(std::max<long>(lines, 1)) + " line(s) of " + m.name +
                               "'s inbox could not be read and were set aside: messages it never got",
                           m.name + "_inbox.quarantine", 1});
  }
  for (const auto& tr : r->tasks) {
    const Task& t = tr.task;
    if (t.status != TaskStatus::kInProgress || t.owner.empty()) continue;
    const Member* owner = team.Find(t.owner);
    if (owner != nullptr && owner->status != MemberStatus::kShutdown) continue;
    AddFailure(r, {FailureClass::kCoordination, t.updated_at, t.owner, t.id,
                           TaskRef(t.id) + " was left in progress by " + t.owner +
                               (owner == nullptr ? ", who is not in the team" : ", who has shut down"),
                           "the board", 1});
  }
}

void ReadSpend(TeamStore& store, const Workspace& ws, const TeamConfig& team, const agent::PriceTable& prices,
               Report* r) {
  auto u = agent::TeamUsageOf(store, team.name, ws.AgentsDir(team.name), prices);
  if (!u.ok()) {
    r->notes.push_back("the agents' spending could not be read: " + u.status().message());
    return;
  }
  r->calls = u->calls;
  r->usage = u->total;
  r->cost_usd = u->cost_usd;
  r->cost_known = u->cost_known;
  for (const auto& a : u->agents) {
    auto it = std::find_if(r->agents.begin(), r->agents.end(), [&](const AgentReport& x) { return x.name == a.agent; });
    if (it == r->agents.end()) {
      r->agents.push_back({});
      it = r->agents.end() - 1;
      it->name = a.agent;
      it->role = a.from.empty() ? "subagents" : "agent CLI";
    }
    it->calls = a.calls;
    it->usage = a.usage;
    it->cost_usd = a.cost_usd;
    it->cost_known = a.cost_known && a.unknown.empty();
  }
  const TeamBudget& b = team.budget;
  if (!b.any()) return;
  const int64_t tokens = agent::TotalTokens(r->usage) + b.counted_tokens();
  const double usd = r->cost_usd + b.counted_usd();
  r->budget = agent::DescribeBudget(b, agent::TotalTokens(r->usage), r->cost_usd);
  const bool spent = (b.tokens > 0 && tokens >= b.tokens) || (b.usd > 0 && usd >= b.usd);
  const bool said = r->failure_counts[FailureClass::kBudget] > 0;
  if (spent && !said) {
    AddFailure(r, {FailureClass::kBudget, r->ended, "", 0, "the team's budget is spent: " + r->budget, "config.json", 1});
  }
}

// A failure of an agent's at a time it held a task is that task's.
void AttributeToTasks(Report* r) {
  for (auto& f : r->failures) {
    if (f.task != 0 || f.agent.empty() || f.at == 0) continue;
    for (const auto& b : r->bars) {
      if (b.agent == f.agent && b.from <= f.at && f.at <= b.to) f.task = b.task;
    }
  }
}

}  // namespace

std::string_view FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kSpecification: return "specification";
    case FailureClass::kCoordination: return "coordination";
    case FailureClass::kVerification: return "verification";
    case FailureClass::kTooling: return "tooling";
    case FailureClass::kProvider: return "provider";
    case FailureClass::kBudget: return "budget";
  }
  return "tooling";
}

std::string_view FailureClassMeaning(FailureClass c) {
  switch (c) {
    case FailureClass::kSpecification:
      return "the work as asked or planned: a plan rejected, an agent going round in circles, a turn cut at its limit";
    case FailureClass::kCoordination:
      return "agents working against each other: conflicting changes, work left with someone gone, messages lost, "
             "a shutdown declined";
    case FailureClass::kVerification:
      return "work that did not pass: a merge's check failed, a reviewer rejected it";
    case FailureClass::kTooling:
      return "tooling or environment: tool calls that failed (commands, files, the sandbox, hooks), a turn the "
             "loop could not finish";
    case FailureClass::kProvider:
      return "the model's service: calls that failed after their retries, refusals";
    case FailureClass::kBudget: return "a budget spent: no further model calls";
  }
  return "";
}

Result<Report> Build(TeamStore& store, const Workspace& ws, const std::string& team, const std::string& state,
                     const agent::PriceTable& prices) {
  MATES_ASSIGN_OR_RETURN(TeamConfig config, store.LoadTeam(team));
  Report r;
  r.team = team;
  r.state = state;
  r.where = store.where();
  r.lead = config.lead;
  r.sessions = config.sessions;
  r.made = WallSeconds();
  Span(&r, config.created_at);
  std::map<std::string, std::string> journals;  // agent → its journal's text
  for (const auto& m : config.members) {
    Span(&r, m.joined_at);
    AgentReport a;
    a.name = m.name;
    a.role = m.role == MemberRole::kLead ? "lead" : m.role_title.empty() ? "teammate" : m.role_title;
    a.model = m.model;
    MATES_ASSIGN_OR_RETURN(journals[m.name], ReadAgent(store, team, &a, &r));
    Span(&r, a.first);
    Span(&r, a.last);
    r.agents.push_back(std::move(a));
  }
  MATES_RETURN_IF_ERROR(ReadMessages(store, team, &r));
  MATES_ASSIGN_OR_RETURN(std::vector<Task> tasks, store.Board(team)->List(true));
  for (const auto& t : tasks) {
    Span(&r, t.created_at);
    Span(&r, t.updated_at);
  }
  MATES_ASSIGN_OR_RETURN(r.merges, store.Merges(team)->List());
  ReadMerges(r.merges, &r);
  MATES_ASSIGN_OR_RETURN(r.requests, store.Mail(team)->ListRequests());
  ReadRequests(r.requests, &r);
  // A team at work: its timeline runs to now.
  if (store.LiveHost(team)) r.ended = std::max(r.ended, r.made);
  if (r.started == 0) r.started = r.ended = r.made;
  ReadTasks(std::move(tasks), journals, prices, &r);
  ReadTheRest(ws, config, &r);
  ReadSpend(store, ws, config, prices, &r);
  AttributeToTasks(&r);
  auto by_time = [](const auto& a, const auto& b) { return a.at < b.at; };
  std::stable_sort(r.failures.begin(), r.failures.end(), by_time);
  std::stable_sort(r.decisions.begin(), r.decisions.end(), by_time);
  if (r.failures.size() + r.failures_dropped > kMaxListed) {
    r.notes.push_back(std::to_string(kMaxListed) + " of " + std::to_string(r.failures.size() + r.failures_dropped) +
                      " failures are listed (the counts by class are of them all)");
    r.failures.resize(std::min(r.failures.size(), kMaxListed));
  }
  if (r.decisions.size() > kMaxListed) {
    r.notes.push_back("the first " + std::to_string(kMaxListed) + " of " + std::to_string(r.decisions.size()) +
                      " decisions are listed");
    r.decisions.resize(kMaxListed);
  }
  return r;
}

}  // namespace mates::report
