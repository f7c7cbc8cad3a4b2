#include "replay/record.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json.h"

namespace mates::replay {
namespace {

namespace fs = std::filesystem;

// What the agent loop adds to continue a reply cut at max_tokens, and a
// paused turn (agent/agent_loop.cc): the reply before it stopped so.
constexpr std::string_view kCutOff = "[Your reply was cut off at the output limit.";
constexpr std::string_view kPaused = "Continue.";

struct Line {
  double ts = 0;
  size_t order = 0;
  Json j;
};

double TimeOf(const Json& j, double fallback) {
  auto ts = j.find("ts");
  return ts != j.end() && ts->is_number() ? ts->get<double>() : fallback;
}

template <typename F>
void ForEachLine(std::string_view text, F&& f) {
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) break;  // a torn last line carries nothing
    if (nl > at) f(text.substr(at, nl - at));
    at = nl + 1;
  }
}

// The task a teammate's claim notice names ("Task #N: subject"), else 0.
int64_t ClaimedTask(const std::string& text) {
  constexpr std::string_view kTask = "Task #";
  if (text.rfind(kTask, 0) != 0) return 0;
  char* end = nullptr;
  const long long id = std::strtoll(text.c_str() + kTask.size(), &end, 10);
  return end != nullptr && *end == ':' && id > 0 ? id : 0;
}

// Walks an agent's lines in order into its calls.
class CallReader {
 public:
  CallReader(RecordedAgent* agent, std::vector<std::string>* notes) : a_(agent), notes_(notes) {}

  void Take(const Line& l) {
    const std::string kind = StringOr(l.j, "kind");
    if (kind == "usage") {
      usage_ = llm::UsageFromJson(FieldOr(l.j, "usage"));
      model_ = StringOr(l.j, "model");
    } else if (kind == "turn_end") {
      TurnEnd(l);
    } else if (kind == "message") {
      auto m = llm::MessageFromJson(FieldOr(l.j, "message"));
      if (!m.ok()) {
        Note("a message line that does not read (" + m.status().message() + ")");
        return;
      }
      if (m->role == llm::Role::kUser) {
        User(*m, l);
      } else {
        Reply(std::move(m->content), l.ts);
      }
    }
  }

 private:
  void Note(const std::string& what) {
    if (notes_ != nullptr && noted_.insert(what).second) notes_->push_back(a_->name + ": " + what);
  }

  RecordedCall* Last() { return a_->calls.empty() ? nullptr : &a_->calls.back(); }

  void User(const llm::ChatMessage& m, const Line& l) {
    input_ts_ = l.ts;
    if (auto d = l.j.find("delivered"); d != l.j.end() && d->is_array()) {
      delivered_ += static_cast<int64_t>(d->size());
    }
    for (const auto& b : m.content) {
      if (b.type == llm::BlockType::kToolResult) {
        RecordedCall* c = Last();
        if (c == nullptr || !c->reply.HasToolUse()) {
          Note("a tool result for no call (" + b.tool_use_id + ")");
          continue;
        }
        if (c->effects_ts == 0) c->effects_ts = l.ts;
        c->results.push_back(b);
        continue;
      }
      if (b.type != llm::BlockType::kText) continue;
      RecordedCall* c = Last();
      if (c != nullptr && !c->reply.HasToolUse() && c->reply.stop_reason == "end_turn" &&
          taken_.empty()) {
        // The loop's own words after a reply it goes on from.
        if (b.text.rfind(kCutOff, 0) == 0) {
          c->reply.stop_reason = "max_tokens";
          turn_over_ = false;
        } else if (b.text == kPaused) {
          c->reply.stop_reason = "pause_turn";
          turn_over_ = false;
        }
      }
      if (int64_t t = ClaimedTask(b.text); t > 0 && claimed_ == 0) claimed_ = t;
      taken_.push_back(b.text);
    }
  }

  RecordedCall& NewCall(double ts) {
    if (turn_over_) ++turn_;
    turn_over_ = false;
    RecordedCall& c = a_->calls.emplace_back();
    c.turn = turn_;
    c.reply_ts = ts;
    c.take_ts = input_ts_ > 0 ? std::min(input_ts_, ts) : ts;
    c.taken = std::exchange(taken_, {});
    c.delivered_total = delivered_;
    c.claimed_task = std::exchange(claimed_, 0);
    return c;
  }

  void Reply(std::vector<llm::ContentBlock> content, double ts) {
    RecordedCall& c = NewCall(ts);
    c.reply.content = std::move(content);
    c.reply.stop_reason = c.reply.HasToolUse() ? "tool_use" : "end_turn";
    c.reply.usage = std::exchange(usage_, {});
    c.reply.model = std::exchange(model_, "");
    turn_over_ = !c.reply.HasToolUse();
  }

  void TurnEnd(const Line& l) {
    const std::string end = StringOr(l.j, "end");
    if (end == "failed" && StringOr(l.j, "in") == "model") {
      RecordedCall& c = NewCall(l.ts);
      c.failed = true;
      c.why = StringOr(l.j, "why");
      usage_ = {};
      model_.clear();
    } else if (end == "refusal") {
      if (RecordedCall* c = Last(); c != nullptr && !c->reply.HasToolUse()) c->reply.stop_reason = "refusal";
    }
    turn_over_ = true;
  }

  RecordedAgent* a_;
  std::vector<std::string>* notes_;
  std::set<std::string> noted_;
  llm::Usage usage_;
  std::string model_;
  double input_ts_ = 0;
  std::vector<std::string> taken_;
  int64_t delivered_ = 0;
  int64_t claimed_ = 0;
  int turn_ = 1;
  bool turn_over_ = false;
};

}  // namespace

RecordedAgent ReadAgent(const std::string& name, const std::vector<JournalSource>& journals,
                        bool expand_first_compact, std::vector<std::string>* notes) {
  std::vector<Line> lines;
  for (size_t i = 0; i < journals.size(); ++i) {
    double last = 0;
    bool first_line = true;
    ForEachLine(journals[i].text, [&](std::string_view text) {
      auto parsed = ParseJson(text);
      const bool leading = std::exchange(first_line, false);
      if (!parsed.ok() || !parsed->is_object()) return;
      last = TimeOf(*parsed, last);
      const std::string kind = StringOr(*parsed, "kind");
      if (kind == "compact") {
        if (i != 0 || !leading || !expand_first_compact) return;
        auto msgs = parsed->find("messages");
        if (msgs == parsed->end() || !msgs->is_array()) return;
        for (auto& m : *msgs) lines.push_back({last, lines.size(), Json{{"kind", "message"}, {"message", m}}});
        return;
      }
      if (kind != "message" && kind != "usage" && kind != "turn_end") return;
      lines.push_back({last, lines.size(), std::move(*parsed)});
    });
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.ts < b.ts; });
  RecordedAgent agent;
  agent.name = name;
  CallReader reader(&agent, notes);
  for (const Line& l : lines) reader.Take(l);
  return agent;
}

std::string FirstWords(std::string_view journal_text, double after) {
  std::string words;
  ForEachLine(journal_text, [&](std::string_view text) {
    if (!words.empty()) return;
    auto j = ParseJson(text);
    if (!j.ok() || !j->is_object() || (after > 0 && TimeOf(*j, 0) < after)) return;
    const Json* messages = nullptr;
    Json one;
    if (StringOr(*j, "kind") == "message") {
      one = Json::array({FieldOr(*j, "message")});
      messages = &one;
    } else if (StringOr(*j, "kind") == "compact" && after <= 0) {
      auto m = j->find("messages");
      if (m != j->end() && m->is_array()) messages = &*m;
    }
    if (messages == nullptr) return;
    for (const auto& m : *messages) {
      auto msg = llm::MessageFromJson(m);
      if (msg.ok() && msg->role == llm::Role::kUser && !msg->Text().empty()) {
        words = msg->Text();
        return;
      }
    }
  });
  return words;
}

std::string CameFrom(std::string_view journal_text) {
  std::string team;
  bool first = true;
  ForEachLine(journal_text, [&](std::string_view text) {
    if (!std::exchange(first, false)) return;
    auto j = ParseJson(text);
    if (!j.ok() || !j->is_object() || StringOr(*j, "kind") != "compact") return;
    // <root>/.teams/<team>/agents/<name>.jsonl
    const fs::path p(StringOr(*j, "transcript"));
    if (p.parent_path().filename() != "agents") return;
    const fs::path teams = p.parent_path().parent_path().parent_path();
    if (teams.filename() != ".teams") return;
    team = p.parent_path().parent_path().filename().string();
  });
  return team;
}

std::vector<std::string> MovedTo(std::string_view journal_text) {
  std::vector<std::string> teams;
  ForEachLine(journal_text, [&](std::string_view text) {
    if (text.find(R"("moved")") == std::string_view::npos) return;
    auto j = ParseJson(text);
    if (!j.ok() || !j->is_object() || StringOr(*j, "kind") != "moved") return;
    const std::string team = StringOr(*j, "team");
    if (!team.empty() && std::find(teams.begin(), teams.end(), team) == teams.end()) teams.push_back(team);
  });
  return teams;
}

double FirstTime(std::string_view journal_text) {
  double first = 0;
  ForEachLine(journal_text, [&](std::string_view text) {
    if (first > 0) return;
    auto j = ParseJson(text);
    if (j.ok() && j->is_object()) first = TimeOf(*j, 0);
  });
  return first;
}

}  // namespace mates::replay
