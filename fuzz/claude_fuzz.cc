// Claude Code's team files as mates reads them (claude/claude_team.h): a
// roster, an inbox and a transcript, from one input cut at NUL bytes. What
// is read never outgrows what was given, counts never go negative, and
// nothing crashes on what another program (or a person) left there.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "claude/claude_team.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mates;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view part[3];
  for (int i = 0; i < 3; ++i) {
    size_t cut = in.find('\0');
    part[i] = in.substr(0, cut);
    in = cut == std::string_view::npos ? std::string_view() : in.substr(cut + 1);
  }
  if (auto j = ParseJson(part[0]); j.ok()) {
    if (auto c = claude::TeamConfigFromJson(*j); c.ok()) {
      for (const auto& m : c->members) Check(m.name.size() <= size);
      (void)c->lead();
    }
    if (j->is_object()) {
      claude::Task t = claude::TaskFromJson(*j);
      Check(t.subject.size() <= size);
    }
  }
  if (auto j = ParseJson(part[1]); j.ok() && j->is_array()) {
    for (const auto& e : *j) {
      if (!e.is_object()) continue;
      claude::Message m = claude::MessageFromInbox(e, "alpha");
      Check(m.text.size() <= size);
      (void)claude::Gist(m);
    }
  }
  auto s = claude::SummarizeTranscript(part[2], "beta");
  Check(s.activity.calls >= 0);
  Check(s.activity.tokens.input_tokens >= 0 && s.activity.tokens.output_tokens >= 0);
  for (const auto& m : s.delivered) {
    Check(m.text.size() <= size && m.to == "beta");
    (void)claude::Gist(m);
  }
  for (const auto& m : claude::MessagesInTurn(part[2], "gamma", 0)) Check(m.text.size() <= size);
  return 0;
}
