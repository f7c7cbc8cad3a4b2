// Scenario: the scripted replies of DESIGN §6, used by the scripted provider
// and by `mates mock-llm`.
//
//   {"rules": [{"agent": "lead", "when": "migrate", "once": true, "delay_ms": 0,
//               "reply": [{"type": "text", "text": "…"},
//                         {"type": "tool_use", "name": "TeamCreate", "input": {…}}]}],
//    "default_reply": [{"type": "text", "text": "Done."}]}
//
// `agent` globs the agent's name; `when` is a regex searched in the newest
// user turn's text (ECMAScript syntax as RE2 takes it: no back-references or
// look-arounds, which is what keeps a search linear and off the stack) (text blocks and tool_result contents joined
// by newlines); $1…$9 in any string of `reply` become its capture groups;
// `once` (default true) lets a rule fire once per agent; the first eligible
// rule in file order wins, else `default_reply`. Extension: a rule may set
// `stop_reason` (e.g. "max_tokens", "refusal") to override the one derived
// from the reply (tool_use when it has a tool_use block, else end_turn).
// JSON or YAML. A broken file is refused before anything runs, with what and
// where ("rules[2].when: invalid regex …").
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "llm/types.h"

namespace re2 {
class RE2;
}

namespace mates::llm {

struct ScenarioRule {
  std::string agent = "*";
  std::string when;  // "" = always
  std::shared_ptr<const re2::RE2> when_re;
  bool once = true;
  int delay_ms = 0;
  std::string stop_reason;  // "" = derived
  std::string reply_json;   // the reply blocks (a JSON array), substituted per use
};

struct ScenarioReply {
  std::vector<ContentBlock> content;
  std::string stop_reason;
  int delay_ms = 0;
  int rule = -1;  // index of the rule that fired, -1 = default_reply
};

class Scenario {
 public:
  // Parses and validates; errors name `source` and the place.
  static Result<Scenario> Parse(const std::string& text, const std::string& source);
  // JSON or YAML by extension (.json / .yaml / .yml), else JSON then YAML.
  static Result<Scenario> Load(const std::string& path);

  Scenario(Scenario&& o) noexcept;
  Scenario& operator=(Scenario&&) = delete;

  // The reply for `agent` whose newest user turn reads `user_text`.
  // Thread-safe; deterministic given the order of calls per agent. With
  // `consume` false a `once` rule that matches is not used up (a reply
  // that will not reach the client: mock-llm's injected faults). `$TEAM`
  // in a reply is `team` (the agent's, from its id "name@team"), so that
  // one scenario serves any team.
  ScenarioReply Reply(const std::string& agent, const std::string& user_text, bool consume = true,
                      const std::string& team = "");
  // The delay_ms of the reply Reply would give now, without using up a
  // `once` rule or making the reply.
  int DelayOf(const std::string& agent, const std::string& user_text);

  size_t rule_count() const { return rules_.size(); }

 private:
  Scenario() = default;
  // The index of the rule that answers now (-1: the default reply), its
  // groups into `match`; mu_ held.
  int RuleFor(const std::string& agent, const std::string& user_text,
              std::vector<std::string>* match) const;

  std::vector<ScenarioRule> rules_;
  std::string default_reply_json_;
  std::mutex mu_;
  std::set<std::pair<size_t, std::string>> fired_;  // (rule, agent), guarded by mu_
  uint64_t next_tool_id_ = 1;                       // guarded by mu_
  // Tool ids are "toolu_s<run>_<n>": <run> is random per loaded scenario, so
  // a conversation resumed from a journal in a later run never sees an id
  // twice (the API refuses duplicates).
  std::string run_tag_;
};

// The text a scenario's `when` is matched against: the newest user turn's
// text blocks and tool_result contents, joined by newlines.
std::string NewestUserText(const std::vector<ChatMessage>& messages);
// The agent's name in an agent id ("frontend@team" -> "frontend").
std::string AgentName(const std::string& agent_id);
// "team" of "name@team" ("" without one).
std::string TeamOfAgent(const std::string& agent_id);
// Glob match with * and ? (fnmatch).
bool GlobMatch(const std::string& pattern, const std::string& name);
// YAML text to JSON; errors carry line and column.
Result<Json> YamlToJson(const std::string& text);

}  // namespace mates::llm
