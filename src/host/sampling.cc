#include "host/sampling.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/log.h"

namespace mates::host {
namespace {

// One MCP content block as text, or why it is not served.
Result<std::string> TextOf(const Json& block) {
  if (!block.is_object()) return Status::InvalidArgument("a message's content must be a block object");
  const std::string type = block.contains("type") && block["type"].is_string() ? block["type"].get<std::string>() : "";
  if (type != "text") {
    return Status::InvalidArgument("mates samples text only, not " + (type.empty() ? std::string("a block without type") : "'" + type + "'"));
  }
  if (!block.contains("text") || !block["text"].is_string()) return Status::InvalidArgument("a text block needs its text");
  return block["text"].get<std::string>();
}

}  // namespace

Result<llm::Request> SamplingRequest(const Json& params, const std::string& model) {
  if (!params.is_object()) return Status::InvalidArgument("sampling/createMessage needs params");
  if (params.contains("tools")) return Status::InvalidArgument("mates does not sample with tools");
  const Json* messages = params.contains("messages") ? &params["messages"] : nullptr;
  if (messages == nullptr || !messages->is_array() || messages->empty()) {
    return Status::InvalidArgument("sampling/createMessage needs messages");
  }
  if (!params.contains("maxTokens") || !params["maxTokens"].is_number_integer() || params["maxTokens"].get<int64_t>() < 1) {
    return Status::InvalidArgument("sampling/createMessage needs maxTokens, a whole number > 0");
  }
  llm::Request req;
  req.model = model;
  req.max_tokens = static_cast<int>(std::min<int64_t>(params["maxTokens"].get<int64_t>(), kMaxSamplingTokens));
  req.cache = false;  // one call: nothing to read back
  if (params.contains("systemPrompt")) {
    if (!params["systemPrompt"].is_string()) return Status::InvalidArgument("systemPrompt must be a string");
    req.system = params["systemPrompt"].get<std::string>();
  }
  if (params.contains("temperature") && params["temperature"].is_number()) {
    req.temperature = std::clamp(params["temperature"].get<double>(), 0.0, 1.0);
  }
  for (const auto& m : *messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      return Status::InvalidArgument("each message needs a role");
    }
    const std::string role = m["role"];
    if (role != "user" && role != "assistant") return Status::InvalidArgument("a message's role is user or assistant, not '" + role + "'");
    llm::ChatMessage msg;
    msg.role = role == "user" ? llm::Role::kUser : llm::Role::kAssistant;
    const Json content = m.contains("content") ? m["content"] : Json();
    for (const Json& block : content.is_array() ? content : Json::array({content})) {
      MATES_ASSIGN_OR_RETURN(std::string text, TextOf(block));
      msg.content.push_back(llm::ContentBlock::Text(std::move(text)));
    }
    if (msg.content.empty()) return Status::InvalidArgument("a message has no content");
    req.messages.push_back(std::move(msg));
  }
  size_t bytes = req.system.size();
  for (const auto& m : req.messages) {
    for (const auto& b : m.content) bytes += b.text.size();
  }
  if (bytes > kMaxSamplingInputBytes) {
    return Status::InvalidArgument("mates samples " + std::to_string(kMaxSamplingInputBytes >> 10) +
                                   " KiB of text at most; this asks " + std::to_string(bytes >> 10) + " KiB");
  }
  return req;
}

Json SamplingResult(const llm::Response& r) {
  std::string stop;
  switch (r.stop()) {
    case llm::StopReason::kEndTurn:
      stop = "endTurn";
      break;
    case llm::StopReason::kMaxTokens:
      stop = "maxTokens";
      break;
    case llm::StopReason::kStopSequence:
      stop = "stopSequence";
      break;
    default:
      stop = r.stop_reason;
  }
  return Json{{"role", "assistant"},
              {"content", {{"type", "text"}, {"text", r.Text()}}},
              {"model", r.model},
              {"stopReason", stop}};
}

Result<Json> Sample(const Sampler& s, const std::string& server, const Json& params, const CancelToken& stop) {
  MATES_ASSIGN_OR_RETURN(llm::Request req, SamplingRequest(params, s.model));
  if (s.spend) {
    if (std::string why = s.spend->Exceeded(); !why.empty()) {
      return Status::FailedPrecondition("mates does not sample for server " + server + ": " + why);
    }
  }
  req.agent_id = s.agent_id;
  CancelToken cancel;
  CancelLink link(const_cast<CancelToken*>(&stop), &cancel);
  MATES_ASSIGN_OR_RETURN(llm::Response r, s.provider->Complete(req, llm::StreamCallbacks{}, &cancel));
  const std::string model = r.model.empty() ? (s.model.empty() ? s.provider->default_model() : s.model) : r.model;
  if (s.spend) s.spend->Add(s.spend->team(), model, r.usage);
  if (s.record) {
    if (Status rec = s.record(r.usage, model); !rec.ok()) {
      LogWarning("mcp server " + server + ": a sampling's use was not recorded: " + rec.message());
    }
  }
  if (r.model.empty()) r.model = model;
  LogInfo("mcp server " + server + " sampled the model (" + std::to_string(r.usage.output_tokens) + " tokens out)");
  return SamplingResult(r);
}

}  // namespace mates::host
