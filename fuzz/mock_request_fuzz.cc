// libFuzzer target: what `mates mock-llm` does with a request body before it
// answers (DESIGN §28): each API's checks, the newest user turn it reads,
// its prompt-cache accounting, and its whole and streamed answers. The
// first byte chooses the API (Anthropic, OpenAI Chat, OpenAI Responses,
// Gemini) and whether the model is a Gemini 3 one; the rest is the body.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/json.h"
#include "llm/mock_api.h"
#include "llm/prompt_cache.h"

using namespace mates;
using namespace mates::llm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const std::unique_ptr<MockApi> kApis[] = {AnthropicMockApi(), ChatMockApi(), ResponsesMockApi(),
                                                   GeminiMockApi()};
  const MockApi& api = *kApis[data[0] % 4];
  auto body = ParseJson(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  if (!body.ok()) return 0;
  MockCall call;
  call.body = *body;
  call.agent_id = api.AgentId(call.body);
  call.model = (data[0] & 4) != 0 ? "gemini-3-pro-preview" : StringOr(call.body, "model", "m");
  call.stream = (data[0] & 8) != 0;
  call.sse = (data[0] & 16) == 0;
  if (!api.Validate(call).ok()) return 0;
  (void)api.UserText(call.body);
  PromptCache cache([] { return 0.0; });
  Usage usage = api.Accounted(cache, call);
  ScenarioReply reply;
  reply.content = {ContentBlock::Text("ok"), ContentBlock::ToolUse("toolu_1", "t", R"({"a":1})")};
  reply.stop_reason = "tool_use";
  (void)api.Whole(reply, call, usage);
  (void)api.Events(reply, call, usage, 8);
  return 0;
}
