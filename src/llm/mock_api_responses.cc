// The OpenAI Responses API as `mates mock-llm` serves it (POST
// /v1/responses; DESIGN §28): a scenario's text is a message item with an
// output_text part, a tool_use a function_call item; streamed as the
// API's typed events (response.created … response.completed), each with
// its sequence_number. Usage as the API reports it: input_tokens count the
// cached ones too (input_tokens_details.cached_tokens).
#include "core/clock.h"
#include "core/ids.h"
#include "llm/mock_api.h"
#include "llm/prompt_cache.h"
#include "llm/validation.h"

namespace mates::llm {
namespace {

using mock::Field;

Json ResponsesUsage(const Usage& u) {
  return {{"input_tokens", u.input_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cache_read_input_tokens}}},
          {"output_tokens", u.output_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", u.input_tokens + u.output_tokens}};
}

// The text of an item's content: a string, or its text parts.
std::string ContentText(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (!content.is_array()) return out;
  for (const auto& p : content) {
    const std::string type = StringOr(p, "type");
    if (type != "input_text" && type != "output_text" && type != "text") continue;
    if (!out.empty()) out += "\n";
    out += StringOr(p, "text");
  }
  return out;
}

// A scenario names a tool in a namespace (Codex puts each MCP server's
// tools in one, "mcp__SERVER") by its full name, "mcp__SERVER__TOOL": the
// call then names the tool and its namespace, as the API's does. `tools` is
// the request's.
void NameCall(const Json& tools, const std::string& full, Json* item) {
  if (!tools.is_array()) return;
  for (const auto& t : tools) {
    if (StringOr(t, "type") != "namespace") continue;
    std::string ns = StringOr(t, "name");
    if (ns.empty() || full.rfind(ns, 0) != 0) continue;
    std::string rest = full.substr(ns.size());
    if (ns.size() < 2 || ns.compare(ns.size() - 2, 2, "__") != 0) {
      if (rest.rfind("__", 0) != 0) continue;
      rest = rest.substr(2);
    }
    for (const auto& f : Field(t, "tools")) {
      if (StringOr(f, "name") != rest) continue;
      (*item)["name"] = rest;
      (*item)["namespace"] = ns;
      return;
    }
  }
}

// The output items of a reply, each as it is when done.
Json OutputItems(const ScenarioReply& reply, const Json& tools) {
  Json items = Json::array();
  for (const auto& b : reply.content) {
    if (b.type == BlockType::kText) {
      const bool refusal = reply.stop_reason == "refusal";
      Json part = refusal ? Json{{"type", "refusal"}, {"refusal", b.text}}
                          : Json{{"type", "output_text"}, {"text", b.text}, {"annotations", Json::array()}};
      items.push_back({{"type", "message"}, {"id", NewId("msg")}, {"status", "completed"}, {"role", "assistant"},
                       {"content", Json::array({part})}});
    } else if (b.type == BlockType::kToolUse) {
      Json item = {{"type", "function_call"}, {"id", NewId("fc")}, {"call_id", b.id}, {"name", b.name},
                   {"arguments", b.input_json}, {"status", "completed"}};
      NameCall(tools, b.name, &item);
      items.push_back(std::move(item));
    }
  }
  return items;
}

class ResponsesApi : public MockApi {
 public:
  // mates sends safety_identifier; older clients `user`.
  std::string AgentId(const Json& body) const override {
    std::string id = StringOr(body, "safety_identifier");
    return id.empty() ? StringOr(body, "user") : id;
  }
  Status Validate(const MockCall& call) const override { return ValidateResponsesRequest(call.body); }

  // The items after the last one the model made: user messages and
  // function call outputs.
  std::string UserText(const Json& body) const override {
    const Json& input = Field(body, "input");
    if (input.is_string()) return input.get<std::string>();
    std::vector<std::string> parts;
    for (auto it = input.rbegin(); it != input.rend(); ++it) {
      const std::string type = StringOr(*it, "type", Field(*it, "role").is_null() ? "" : "message");
      const std::string role = StringOr(*it, "role");
      if (type == "function_call" || type == "reasoning" || (type == "message" && role == "assistant")) break;
      if (type == "message" && role == "user") {
        parts.push_back(ContentText(Field(*it, "content")));
      } else if (type == "function_call_output") {
        const Json& out = Field(*it, "output");
        parts.push_back(out.is_string() ? out.get<std::string>() : ContentText(out));
      }
    }
    return mock::JoinOldestFirst(parts);
  }

  std::vector<std::string> OfferedTools(const Json& body) const override {
    std::vector<std::string> out;
    for (const auto& t : Field(body, "tools")) {
      const std::string name = StringOr(t, "name");
      if (StringOr(t, "type") != "namespace") {
        out.push_back(name);
        continue;
      }
      const bool joined = name.size() >= 2 && name.compare(name.size() - 2, 2, "__") == 0;
      for (const auto& f : Field(t, "tools")) out.push_back(name + (joined ? "" : "__") + StringOr(f, "name"));
    }
    return out;
  }
  Usage Accounted(PromptCache& cache, const MockCall& call) const override {
    return cache.Responses(AgentName(call.agent_id), call.body);
  }
  std::string Error(int, const std::string& type, const std::string& message) const override {
    return mock::OpenAIError(type, message);
  }

  std::string Whole(const ScenarioReply& reply, const MockCall& call, const Usage& usage) const override {
    return DumpJson(Response(reply, call, NewId("resp"), OutputItems(reply, Field(call.body, "tools")), &usage));
  }

  std::vector<std::string> Events(const ScenarioReply& reply, const MockCall& call, const Usage& usage,
                                  size_t text_chunk) const override {
    std::vector<std::string> ev;
    int64_t seq = 0;
    auto add = [&](const std::string& type, Json data) {
      Json e = {{"type", type}, {"sequence_number", seq++}};
      for (auto& [k, v] : data.items()) e[k] = std::move(v);
      ev.push_back("event: " + type + "\ndata: " + DumpJson(e) + "\n\n");
    };
    const std::string id = NewId("resp");
    add("response.created", {{"response", Response(reply, call, id, Json::array(), nullptr)}});
    add("response.in_progress", {{"response", Response(reply, call, id, Json::array(), nullptr)}});
    const Json items = OutputItems(reply, Field(call.body, "tools"));
    for (size_t i = 0; i < items.size(); ++i) {
      const Json& item = items[i];
      const std::string item_id = item["id"].get<std::string>();
      Json started = item;
      started["status"] = "in_progress";
      if (item["type"] == "function_call") {
        started["arguments"] = "";
        add("response.output_item.added", {{"output_index", i}, {"item", started}});
        const std::string args = item["arguments"].get<std::string>();
        for (const auto& piece : mock::SplitUtf8(args, 16)) {
          add("response.function_call_arguments.delta", {{"item_id", item_id}, {"output_index", i}, {"delta", piece}});
        }
        add("response.function_call_arguments.done", {{"item_id", item_id}, {"output_index", i}, {"arguments", args}});
      } else {
        started["content"] = Json::array();
        add("response.output_item.added", {{"output_index", i}, {"item", started}});
        const Json& part = item["content"][0];
        const bool refusal = part["type"] == "refusal";
        const std::string text = part[refusal ? "refusal" : "text"].get<std::string>();
        Json empty = part;
        empty[refusal ? "refusal" : "text"] = "";
        const Json where = {{"item_id", item_id}, {"output_index", i}, {"content_index", 0}};
        auto at = [&](Json extra) {
          Json j = where;
          for (auto& [k, v] : extra.items()) j[k] = std::move(v);
          return j;
        };
        add("response.content_part.added", at({{"part", empty}}));
        const std::string delta = refusal ? "response.refusal.delta" : "response.output_text.delta";
        for (const auto& piece : mock::SplitUtf8(text, text_chunk)) add(delta, at({{"delta", piece}}));
        add(refusal ? "response.refusal.done" : "response.output_text.done",
            at({{refusal ? "refusal" : "text", text}}));
        add("response.content_part.done", at({{"part", part}}));
      }
      add("response.output_item.done", {{"output_index", i}, {"item", item}});
    }
    Json done = Response(reply, call, id, items, &usage);
    add(done["status"] == "incomplete" ? "response.incomplete" : "response.completed", {{"response", done}});
    return ev;
  }

  std::string Ping(const MockCall&) const override { return ": ping\n\n"; }
  std::string ErrorEvent(const MockCall& call, const std::string& message) const override {
    Json r = {{"id", NewId("resp")}, {"object", "response"}, {"status", "failed"}, {"model", call.model},
              {"output", Json::array()},
              {"error", {{"code", "server_error"}, {"message", message}}}};
    return "event: response.failed\ndata: " + DumpJson(Json{{"type", "response.failed"}, {"response", r}}) + "\n\n";
  }
  std::string UnknownModel(const std::string& model) const override {
    return DumpJson(Json{{"error", {{"message", "The model `" + model + "` does not exist or you do not have access to it."},
                                    {"type", "invalid_request_error"}, {"param", "model"},
                                    {"code", "model_not_found"}}}});
  }

 private:
  // The response object: in progress (no usage yet) or finished.
  static Json Response(const ScenarioReply& reply, const MockCall& call, const std::string& id, Json output,
                       const Usage* usage) {
    const bool incomplete = reply.stop_reason == "max_tokens";
    Json r = {{"id", id}, {"object", "response"}, {"created_at", static_cast<int64_t>(WallSeconds())},
              {"status", usage == nullptr ? "in_progress" : incomplete ? "incomplete" : "completed"},
              {"error", nullptr},
              {"incomplete_details", incomplete && usage != nullptr ? Json{{"reason", "max_output_tokens"}} : Json()},
              {"model", call.model}, {"output", std::move(output)}, {"parallel_tool_calls", true},
              {"store", false}, {"tool_choice", "auto"}, {"tools", Json::array()}};
    r["usage"] = usage == nullptr ? Json() : ResponsesUsage(*usage);
    return r;
  }
};

}  // namespace

std::unique_ptr<MockApi> ResponsesMockApi() { return std::make_unique<ResponsesApi>(); }

}  // namespace mates::llm
