#include "replay/replayer.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <tuple>

#include "llm/scenario.h"

namespace mates::replay {
namespace {

constexpr size_t kNone = std::numeric_limits<size_t>::max();
constexpr size_t kExcerpt = 160;  // characters of each side of a difference shown

// Where two texts first differ, and an excerpt of each from a little
// before it.
std::pair<std::string, std::string> Excerpts(const std::string& a, const std::string& b) {
  size_t at = 0;
  while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
  const size_t from = at > 40 ? at - 40 : 0;
  auto cut = [&](const std::string& s) {
    std::string e = s.substr(std::min(from, s.size()), kExcerpt);
    if (from > 0) e = "…" + e;
    if (from + kExcerpt < s.size()) e += "…";
    return e;
  };
  return {cut(a), cut(b)};
}

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Replayer::Replayer(std::vector<RecordedAgent> agents, ReplayerOptions options) : options_(std::move(options)) {
  for (auto& r : agents) {
    AgentState& a = agents_.emplace_back();
    a.record = std::move(r);
    for (const auto& c : a.record.calls) {
      a.taken_all.insert(a.taken_all.end(), c.taken.begin(), c.taken.end());
      if (model_ == "replay" && !c.reply.model.empty()) model_ = c.reply.model;
    }
    a.taken_used.assign(a.taken_all.size(), false);
  }
  if (!options_.person.empty() && options_.send) {
    AgentState& p = agents_.emplace_back();
    p.record.name = "user";
    p.person = true;
    for (size_t m = 0; m < options_.person.size(); ++m) {
      events_.push_back({options_.person[m].ts, agents_.size() - 1, m, Kind::kPerson});
    }
  }
  for (size_t i = 0; i < agents_.size(); ++i) {
    const auto& calls = agents_[i].record.calls;
    for (size_t k = 0; k < calls.size(); ++k) {
      const RecordedCall& c = calls[k];
      events_.push_back({c.take_ts, i, k, Kind::kTake});
      events_.push_back({c.reply_ts, i, k, Kind::kReply});
      if (!c.failed && c.reply.HasToolUse() && c.effects_ts > 0) {
        events_.push_back({c.effects_ts, i, k, Kind::kEffects});
      }
    }
  }
  std::stable_sort(events_.begin(), events_.end(), [](const Event& x, const Event& y) {
    return std::tie(x.ts, x.agent, x.call, x.kind) < std::tie(y.ts, y.agent, y.call, y.kind);
  });
  for (auto& a : agents_) {
    const size_t n = a.record.calls.size();
    a.take.assign(n, kNone);
    a.reply.assign(n, kNone);
    a.effects.assign(n, kNone);
  }
  for (size_t e = 0; e < events_.size(); ++e) {
    if (events_[e].kind == Kind::kPerson) continue;
    AgentState& a = agents_[events_[e].agent];
    auto& slot = events_[e].kind == Kind::kTake ? a.take : events_[e].kind == Kind::kReply ? a.reply : a.effects;
    slot[events_[e].call] = e;
  }
  moved_ = std::chrono::steady_clock::now();
  watcher_ = std::thread([this] { Watch(); });
}

Replayer::~Replayer() { Finish(); }

int64_t Replayer::ContextWindow(const std::string&) const {
  // Recorded replies answer whatever the conversation holds: a replay
  // compacts nothing (a compaction's summary is no recorded reply).
  return int64_t{1} << 50;
}

Replayer::AgentState* Replayer::Find(const std::string& name) {
  for (auto& a : agents_) {
    if (a.record.name == name) return &a;
  }
  return nullptr;
}

bool Replayer::Due(size_t event) const {
  const size_t agent = events_[event].agent;
  for (size_t i = frontier_; i < event; ++i) {
    if (!events_[i].done && events_[i].agent != agent) return false;
  }
  return true;
}

void Replayer::Done(size_t event) {
  if (event == kNone || events_[event].done) return;
  events_[event].done = true;
  while (frontier_ < events_.size() && events_[frontier_].done) ++frontier_;
  moved_ = std::chrono::steady_clock::now();
  changed_.notify_all();
}

void Replayer::Await(std::unique_lock<std::mutex>& lock, AgentState& a, const std::function<bool()>& ready) {
  ++a.waiting;
  // Messages arrive in files (no signal here): looked at every few
  // milliseconds; every event done wakes the waiters at once.
  while (!finished_ && !ready()) changed_.wait_for(lock, std::chrono::milliseconds(3));
  --a.waiting;
}

void Replayer::BeforeTake(const std::string& agent, const std::function<int64_t()>& messages) {
  std::unique_lock<std::mutex> lock(mu_);
  AgentState* a = Find(agent);
  if (a == nullptr || finished_) return;
  const size_t k = a->served;
  if (k > 0) Done(a->effects[k - 1]);  // its tools have run
  if (k >= a->record.calls.size() || events_[a->take[k]].done) return;
  const size_t e = a->take[k];
  const int64_t want = a->record.calls[k].delivered_total;
  Await(lock, *a, [&] { return Due(e) && (want <= 0 || messages() >= want); });
  Done(e);
}

bool Replayer::MayClaim(const std::string& agent) {
  std::unique_lock<std::mutex> lock(mu_);
  AgentState* a = Find(agent);
  if (a == nullptr || finished_) return true;
  const size_t k = a->served;
  if (k >= a->record.calls.size() || a->record.calls[k].claimed_task == 0) return false;
  const size_t e = a->take[k];
  Await(lock, *a, [&] { return Due(e); });
  return true;
}

void Replayer::SetNudge(const std::string& agent, const void* owner,
                        std::function<void(const std::string& note)> nudge) {
  std::lock_guard<std::mutex> lock(mu_);
  AgentState* a = Find(agent);
  if (a == nullptr || (!nudge && a->nudge_owner != owner)) return;
  a->nudge = std::move(nudge);
  a->nudge_owner = a->nudge ? owner : nullptr;
}

bool Replayer::Pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !finished_ && frontier_ < events_.size() && events_[frontier_].ts < until_;
}

void Replayer::Until(double ts) {
  std::lock_guard<std::mutex> lock(mu_);
  until_ = ts;
  moved_ = std::chrono::steady_clock::now();  // a session starts: no stall yet
  changed_.notify_all();
}

void Replayer::Diverged(AgentState& a, Divergence d) {
  if (!a.divergence) a.divergence = std::move(d);
}

void Replayer::CompareResults(AgentState& a, size_t k, const llm::Request& request) {
  const RecordedCall& rec = a.record.calls[k];
  if (rec.failed || !rec.reply.HasToolUse()) return;
  std::map<std::string, const llm::ContentBlock*> now;
  for (auto m = request.messages.rbegin(); m != request.messages.rend() && now.empty(); ++m) {
    if (m->role != llm::Role::kUser) continue;
    for (const auto& b : m->content) {
      if (b.type == llm::BlockType::kToolResult) now[b.tool_use_id] = &b;
    }
  }
  for (const auto& use : rec.reply.content) {
    if (use.type != llm::BlockType::kToolUse) continue;
    auto then = std::find_if(rec.results.begin(), rec.results.end(),
                             [&](const llm::ContentBlock& r) { return r.tool_use_id == use.id; });
    if (then == rec.results.end()) continue;  // the record has no result to compare with
    auto it = now.find(use.id);
    const std::string recorded = Masked(then->text, options_.roots);
    const std::string replayed = it == now.end() ? "(no result)" : Masked(it->second->text, options_.roots);
    const bool error_now = it != now.end() && it->second->is_error;
    if (recorded == replayed && then->is_error == error_now) {
      ids_.Learn(then->text, it->second->text, options_.roots);
      continue;
    }
    auto [r, p] = Excerpts(recorded, replayed);
    std::string what = "its result differs";
    if (then->is_error != error_now) what = error_now ? "it failed this time" : "it failed then, not this time";
    Diverged(a, {rec.turn, static_cast<int>(k + 1), use.name, what, r, p});
  }
}

void Replayer::LearnIds(AgentState& a, const llm::Request& request) {
  if (request.messages.empty() || request.messages.back().role != llm::Role::kUser) return;
  for (const auto& b : request.messages.back().content) {
    if (b.type != llm::BlockType::kText || IdsIn(b.text).empty()) continue;
    for (size_t i = 0; i < a.taken_all.size(); ++i) {
      if (a.taken_used[i]) continue;
      if (ids_.Learn(a.taken_all[i], b.text, options_.roots)) {
        a.taken_used[i] = true;
        break;
      }
    }
  }
}

llm::Response Replayer::ReplyFor(const AgentState& a, size_t k) const {
  llm::Response r = a.record.calls[k].reply;
  for (auto& b : r.content) {
    b.text = ids_.Apply(b.text);
    b.input_json = ids_.Apply(b.input_json);
  }
  if (r.model.empty()) r.model = model_;
  r.id = "replay-" + a.record.name + "-" + std::to_string(k + 1);
  return r;
}

Result<llm::Response> Replayer::Complete(const llm::Request& request, const llm::StreamCallbacks& callbacks,
                                         llm::CancelToken* cancel) {
  const std::string who = llm::AgentName(request.agent_id);
  llm::Response reply;
  {
    std::unique_lock<std::mutex> lock(mu_);
    AgentState* a = Find(who);
    if (a == nullptr) {
      notes_.push_back(who + " called the model and is not in the record: it was told the record ends");
      reply.content.push_back(llm::ContentBlock::Text("(the record has no reply for this agent)"));
      reply.stop_reason = "end_turn";
      return reply;
    }
    const size_t k = a->served;
    if (k < a->record.calls.size()) Done(a->take[k]);  // a call made without a take (nothing to take)
    if (k > 0) {
      Done(a->effects[k - 1]);
      CompareResults(*a, k - 1, request);
    }
    LearnIds(*a, request);
    if (k >= a->record.calls.size()) {
      if (!a->record.open_ended) {
        const int turn = a->record.calls.empty() ? 1 : a->record.calls.back().turn + 1;
        Diverged(*a, {turn, static_cast<int>(k + 1), "", "a model call the record does not have", "", ""});
      }
      reply.content.push_back(llm::ContentBlock::Text("(the record has no more replies)"));
      reply.stop_reason = "end_turn";
      reply.model = model_;
      return reply;
    }
    const size_t e = a->reply[k];
    Await(lock, *a, [&] { return Due(e) || (cancel != nullptr && cancel->cancelled()); });
    if (cancel != nullptr && cancel->cancelled() && !Due(e)) return Status::Cancelled("interrupted");
    Done(e);
    a->served = k + 1;
    const RecordedCall& c = a->record.calls[k];
    if (c.failed) return Status::Unavailable("as recorded: " + c.why);
    reply = ReplyFor(*a, k);
  }
  if (callbacks.on_text) {
    if (std::string text = reply.Text(); !text.empty()) callbacks.on_text(text);
  }
  return reply;
}

void Replayer::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!finished_) {
    changed_.wait_for(lock, std::chrono::milliseconds(20));
    if (finished_ || frontier_ >= events_.size() || events_[frontier_].ts >= until_) continue;
    if (SendPersons(lock)) continue;
    // An agent whose tools run is not stalled, however long they take.
    bool in_tools = false;
    for (const auto& a : agents_) {
      if (a.served > 0 && a.effects[a.served - 1] != kNone && !events_[a.effects[a.served - 1]].done) in_tools = true;
    }
    if (in_tools) continue;
    const double quiet = Seconds(std::chrono::steady_clock::now() - moved_);
    Event& e = events_[frontier_];
    AgentState& a = agents_[e.agent];
    const RecordedCall& c = a.record.calls[e.call];
    if (quiet >= options_.give_up_s) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.0f", quiet);
      Diverged(a, {c.turn, static_cast<int>(e.call + 1), "",
                   std::string("the replay stalled before this call: nothing happened for ") + secs +
                       " s (its input never came)",
                   "", ""});
      const char* at = e.kind == Kind::kTake ? "taking in its input for" : "asking for";
      notes_.push_back("pacing stopped: nothing happened for " + std::string(secs) + " s before " + a.record.name +
                       (a.waiting > 0 ? " got past " : " came to ") + at + " its call " + std::to_string(e.call + 1) +
                       (c.delivered_total > 0 && e.kind == Kind::kTake
                            ? " (by then it had taken in " + std::to_string(c.delivered_total) + " messages)"
                            : ""));
      finished_ = true;
      changed_.notify_all();
      break;
    }
    if (quiet >= options_.nudge_after_s && e.kind != Kind::kEffects && a.waiting == 0 && !e.nudged && a.nudge) {
      // Its input came before the replay's take of an earlier turn, say,
      // which took it in then: the turn starts all the same.
      e.nudged = true;
      notes_.push_back(a.record.name + " was nudged to start its turn " + std::to_string(c.turn) + " (call " +
                       std::to_string(e.call + 1) + ")");
      // A turn that began with a claim needs no words: woken, it claims.
      // Called with the lock held: its owner unregisters it (under the
      // lock) before it goes, and a nudge only adds a notice and wakes.
      a.nudge(c.claimed_task > 0 ? "" : "[replay] The recorded session went on here.");
    }
  }
}

bool Replayer::SendPersons(std::unique_lock<std::mutex>& lock) {
  const size_t e = frontier_;
  if (events_[e].kind != Kind::kPerson || !options_.send) return false;
  const PersonMessage m = options_.person[events_[e].call];
  lock.unlock();
  const Status sent = options_.send(m);
  lock.lock();
  if (!sent.ok()) {
    notes_.push_back("the person's message to " + (m.to.empty() ? std::string("everyone") : m.to) +
                     " could not be sent again: " + sent.message());
  }
  Done(e);
  return true;
}

void Replayer::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    changed_.notify_all();
  }
  if (watcher_.joinable()) watcher_.join();
}

std::vector<AgentOutcome> Replayer::Outcomes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<AgentOutcome> out;
  for (const auto& a : agents_) {
    if (a.person) continue;
    AgentOutcome o{a.record.name, static_cast<int>(a.record.calls.size()), static_cast<int>(a.served),
                   a.divergence};
    if (!o.divergence && a.served < a.record.calls.size()) {
      const RecordedCall& next = a.record.calls[a.served];
      o.divergence = Divergence{next.turn, static_cast<int>(a.served + 1), "",
                                "the replay ended before this call (" + std::to_string(a.served) + " of " +
                                    std::to_string(a.record.calls.size()) + " replayed)",
                                "", ""};
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<std::string> Replayer::notes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return notes_;
}

}  // namespace mates::replay
