#include "llm/tool_calls.h"

#include <nlohmann/json.hpp>
#include <set>

#include "core/json.h"
#include "core/limits.h"

namespace mates::llm {

Status AppendToolUses(std::vector<RawToolCall> calls, Response* r) {
  std::set<std::string> used;
  for (size_t i = 0; i < calls.size(); ++i) {
    RawToolCall& c = calls[i];
    if (c.name.empty()) {
      return Status::Unavailable("malformed reply from the server: tool call " + std::to_string(i) +
                                 " names no function");
    }
    if (c.id.empty() || !used.insert(c.id).second) {
      c.id = NewToolUseId();
      used.insert(c.id);
    }
    ContentBlock b = ContentBlock::ToolUse(c.id, c.name, "{}");
    std::string& raw = c.arguments;
    if (!c.arguments_object && raw.find_first_not_of(" \t\r\n") == std::string::npos) raw = "{}";
    if (raw.size() > kMaxToolInputBytes) {
      b.input_error = "the arguments were over " + std::to_string(kMaxToolInputBytes) + " bytes";
      r->content.push_back(std::move(b));
      continue;
    }
    auto j = ParseJson(raw);
    if (j.ok() && j->is_object()) {
      b.input_json = DumpJson(*j);
    } else {
      b.input_error = "the arguments were not a valid JSON object (" +
                      (j.ok() ? std::string("got ") + j->type_name() : j.status().message()) +
                      "): " + raw.substr(0, 300);
    }
    r->content.push_back(std::move(b));
  }
  return Status::Ok();
}

}  // namespace mates::llm
