// What every model call and every status change serializes, next to the
// naive way of writing the same bytes (the way mates wrote them before):
//
//   roster      a 100-member roster as config.json is written at every
//               status change: DumpJsonPretty, one serializer for the whole
//               document, against Json::dump called for every key and value.
//   body        an Anthropic request body (41 messages, 12 tools) as
//               AnthropicRequestBody builds it for every call, members set
//               and moved, against initializer lists (which copy each value
//               once more).
//   openai      the same conversation as an OpenAI chat-completions body
//               (OpenAIRequestBody), against initializer lists and a copy
//               of the whole messages array; then made and recycled at
//               every call, as OpenAIProvider does (RecycleOpenAIBody).
//   validate    the same body checked as mock-llm and the scripted provider
//               check every request (ValidateAnthropicRequest).
//
// Both variants produce the same bytes; the run checks that first.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/json.h"
#include "llm/anthropic.h"
#include "llm/openai.h"
#include "llm/types.h"
#include "llm/validation.h"

using namespace mates;

namespace {

// ------------------------------------------------------------ the naive way

bool HasStructuredChild(const Json& v) {
  for (const auto& c : v) {
    if (c.is_structured() && !c.empty()) return true;
  }
  return false;
}

std::string DumpOne(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

// The pretty layout of core/json.cc, each key and value dumped on its own.
void NaivePretty(const Json& v, int level, std::string* out) {
  const bool laid_out = v.is_object() ? !v.empty() : v.is_array() && HasStructuredChild(v);
  if (level >= 3 || !laid_out) {
    out->append(DumpOne(v));
    return;
  }
  const std::string inner(static_cast<size_t>(2 * (level + 1)), ' ');
  out->append(v.is_object() ? "{\n" : "[\n");
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) out->append(",\n");
    first = false;
    out->append(inner);
    if (v.is_object()) {
      out->append(DumpOne(Json(it.key())));
      out->append(": ");
    }
    NaivePretty(*it, level + 1, out);
  }
  out->append("\n");
  out->append(static_cast<size_t>(2 * level), ' ');
  out->append(v.is_object() ? "}" : "]");
}

Json NaiveBlock(const llm::ContentBlock& b) {
  switch (b.type) {
    case llm::BlockType::kText:
      return {{"type", "text"}, {"text", b.text}};
    case llm::BlockType::kToolUse: {
      auto input = ParseJson(b.input_json);
      return {{"type", "tool_use"}, {"id", b.id}, {"name", b.name},
              {"input", input.ok() && input->is_object() ? *input : Json::object()}};
    }
    case llm::BlockType::kToolResult:
      return {{"type", "tool_result"}, {"tool_use_id", b.tool_use_id}, {"content", b.text}};
  }
  return Json::object();
}

// AnthropicRequestBody's body through initializer lists.
Json NaiveBody(const llm::Request& r, const std::string& model) {
  Json body = {{"model", model}, {"max_tokens", r.max_tokens}};
  Json sys = {{"type", "text"}, {"text", r.system}, {"cache_control", {{"type", "ephemeral"}}}};
  body["system"] = Json::array({sys});
  Json messages = Json::array();
  for (const auto& m : r.messages) {
    Json content = Json::array();
    for (const auto& b : m.content) content.push_back(NaiveBlock(b));
    messages.push_back({{"role", llm::RoleName(m.role)}, {"content", content}});
  }
  int marked = 0;
  for (size_t i = messages.size(); i-- > 0 && marked < 2;) {
    if (messages[i]["role"] != "user" || messages[i]["content"].empty()) continue;
    messages[i]["content"].back()["cache_control"] = {{"type", "ephemeral"}};
    ++marked;
  }
  body["messages"] = std::move(messages);
  Json tools = Json::array();
  for (const auto& t : r.tools) {
    tools.push_back({{"name", t.name}, {"description", t.description}, {"input_schema", llm::ToolSchema(t)}});
  }
  tools.back()["cache_control"] = {{"type", "ephemeral"}};
  body["tools"] = std::move(tools);
  body["metadata"] = {{"user_id", r.agent_id}};
  return body;
}

// OpenAIRequestBody's body as it was: initializer lists, and the whole
// messages array copied into the body.
Json NaiveOpenAIBody(const llm::Request& r, const std::string& model) {
  Json messages = Json::array();
  messages.push_back({{"role", "system"}, {"content", r.system}});
  for (const auto& m : r.messages) {
    if (m.role == llm::Role::kAssistant) {
      Json msg = {{"role", "assistant"}};
      std::string text = m.Text();
      msg["content"] = text.empty() ? Json(nullptr) : Json(text);
      Json calls = Json::array();
      for (const auto& b : m.content) {
        if (b.type != llm::BlockType::kToolUse) continue;
        calls.push_back({{"id", b.id}, {"type", "function"}, {"function", {{"name", b.name}, {"arguments", b.input_json}}}});
      }
      if (!calls.empty()) msg["tool_calls"] = calls;
      messages.push_back(msg);
      continue;
    }
    std::string text;
    for (const auto& b : m.content) {
      if (b.type == llm::BlockType::kToolResult) {
        messages.push_back({{"role", "tool"}, {"tool_call_id", b.tool_use_id}, {"content", b.text}});
      } else if (b.type == llm::BlockType::kText) {
        if (!text.empty()) text += "\n";
        text += b.text;
      }
    }
    if (!text.empty()) messages.push_back({{"role", "user"}, {"content", text}});
  }
  Json body = {{"model", model}, {"messages", messages}, {"max_tokens", r.max_tokens}};
  Json tools = Json::array();
  for (const auto& t : r.tools) {
    Json fn = {{"name", t.name}, {"description", t.description}, {"parameters", llm::ToolSchema(t)}};
    tools.push_back({{"type", "function"}, {"function", fn}});
  }
  body["tools"] = tools;
  body["user"] = r.agent_id;
  return body;
}

// ------------------------------------------------------------------ inputs

Json Roster100() {
  Json members = Json::array();
  for (int i = 0; i < 100; ++i) {
    members.push_back({{"name", "w" + std::to_string(i)},
                       {"agent_id", "w" + std::to_string(i) + "@bench"},
                       {"role", "teammate"},
                       {"status", i % 3 == 0 ? "active" : "idle"},
                       {"color", "cyan"},
                       {"backend", "in-process"},
                       {"model", "claude-sonnet-4-5"},
                       {"plan_mode_required", false},
                       {"prompt", "Work from the board: claim a task, do it, mark it completed."},
                       {"joined_at", 1764000000.125 + i}});
  }
  return {{"name", "bench"}, {"created_at", 1764000000.0}, {"lead", "lead"}, {"members", members}};
}

// A teammate's eleventh task: ten before it, each a claim, a call, its
// result and a reply.
llm::Request TeammateRequest() {
  llm::Request req;
  req.cache = true;
  req.agent_id = "w1@bench";
  req.system = std::string(3000, 's');
  for (int i = 0; i < 12; ++i) {
    req.tools.push_back({"Tool_" + std::to_string(i), "A tool that does one thing and says what it did.",
                         R"({"type":"object","properties":{"task_id":{"type":"string","description":"the id"},)"
                         R"("status":{"type":"string","enum":["pending","in_progress","completed"]}},)"
                         R"("required":["task_id"]})"});
  }
  for (int i = 0; i < 10; ++i) {
    std::string id = "toolu_" + std::to_string(i);
    req.messages.push_back({llm::Role::kUser, {llm::ContentBlock::Text("Task #" + std::to_string(i) + ": do it")}});
    req.messages.push_back(
        {llm::Role::kAssistant, {llm::ContentBlock::ToolUse(id, "Tool_1", R"({"task_id":"3","status":"completed"})")}});
    req.messages.push_back({llm::Role::kUser, {llm::ContentBlock::ToolResult(id, "Updated task #3", false)}});
    req.messages.push_back({llm::Role::kAssistant, {llm::ContentBlock::Text("Done.")}});
  }
  req.messages.push_back({llm::Role::kUser, {llm::ContentBlock::Text("Task #10: do it")}});
  return req;
}

// --------------------------------------------------------------- benchmarks

void BM_RosterDump(benchmark::State& state) {
  const Json roster = Roster100();
  const bool naive = state.range(0) == 0;
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    if (naive) {
      NaivePretty(roster, 0, &out);
    } else {
      out = DumpJsonPretty(roster);
    }
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(std::string(naive ? "naive" : "mates") + ", " + std::to_string(bytes) + " bytes");
}

// A request body built the naive way (Arg 0) or mates' (Arg 1).
using BodyBuilder = Json (*)(const llm::Request&, const std::string&);
void RequestBody(benchmark::State& state, BodyBuilder naive, BodyBuilder mates) {
  const llm::Request req = TeammateRequest();
  const BodyBuilder build = state.range(0) == 0 ? naive : mates;
  for (auto _ : state) {
    Json body = build(req, "m");
    benchmark::DoNotOptimize(body);
  }
  state.SetLabel(state.range(0) == 0 ? "naive" : "mates");
}

Json AnthropicBody(const llm::Request& r, const std::string& model) { return llm::AnthropicRequestBody(r, model, false); }
Json OpenAIBody(const llm::Request& r, const std::string& model) { return llm::OpenAIRequestBody(r, model, false); }

void BM_RequestBody(benchmark::State& state) { RequestBody(state, NaiveBody, AnthropicBody); }
// What a provider does at each call: the body made, then recycled (its
// tools array, and its messages as far as the next call's conversation
// begins with the same ones). Each call here ends in two messages the last
// did not have (a reply with its tool call, then the result): the newest
// turn is made, the 39 before it are taken.
using BodyRecycler = void (*)(const llm::Request&, Json);
void RequestBodyRecycled(benchmark::State& state, BodyBuilder build, BodyRecycler recycle) {
  llm::Request req = TeammateRequest();
  const size_t prefix = req.messages.size() - 2;
  int64_t call = 0;
  for (auto _ : state) {
    state.PauseTiming();
    req.messages.resize(prefix);
    std::string id = "toolu_new" + std::to_string(++call);
    req.messages.push_back(
        {llm::Role::kAssistant, {llm::ContentBlock::ToolUse(id, "Tool_1", R"({"task_id":"3"})")}});
    req.messages.push_back(
        {llm::Role::kUser,
         {llm::ContentBlock::ToolResult(id, "call " + std::to_string(call), false)}});
    state.ResumeTiming();
    Json body = build(req, "m");
    benchmark::DoNotOptimize(body);
    recycle(req, std::move(body));
  }
  state.SetLabel("mates, recycled: tools, and all but the newest turn");
}
void BM_RequestBodyRecycled(benchmark::State& state) {
  RequestBodyRecycled(state, AnthropicBody, llm::RecycleAnthropicBody);
}
void BM_OpenAIRequestBodyRecycled(benchmark::State& state) {
  RequestBodyRecycled(state, OpenAIBody, llm::RecycleOpenAIBody);
}
void BM_OpenAIRequestBody(benchmark::State& state) { RequestBody(state, NaiveOpenAIBody, OpenAIBody); }

void BM_ValidateRequest(benchmark::State& state) {
  const Json body = llm::AnthropicRequestBody(TeammateRequest(), "m", false);
  for (auto _ : state) benchmark::DoNotOptimize(llm::ValidateAnthropicRequest(body, true));
}

BENCHMARK(BM_RosterDump)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RequestBody)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RequestBodyRecycled)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpenAIRequestBody)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpenAIRequestBodyRecycled)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ValidateRequest)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  // The naive variants must write what mates writes, or the comparison says nothing.
  std::string naive;
  NaivePretty(Roster100(), 0, &naive);
  const llm::Request req = TeammateRequest();
  if (naive != DumpJsonPretty(Roster100()) ||
      DumpJson(NaiveBody(req, "m")) != DumpJson(llm::AnthropicRequestBody(req, "m", false)) ||
      DumpJson(NaiveOpenAIBody(req, "m")) != DumpJson(llm::OpenAIRequestBody(req, "m", false))) {
    std::fprintf(stderr, "serialize_bench: a naive variant writes other bytes than mates\n");
    return 1;
  }
  Status valid = llm::ValidateAnthropicRequest(llm::AnthropicRequestBody(req, "m", false), true);
  if (!valid.ok()) {
    std::fprintf(stderr, "serialize_bench: the request is invalid: %s\n", valid.message().c_str());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
