// libFuzzer target: request bodies made from what the thread recycled
// (llm/recycled.h) against bodies made afresh. The input is a program that
// edits one conversation the way an agent's calls do (turns added, blocks
// edited, the conversation cut, the system prompt, the tools and the cache
// switch changed) and makes an Anthropic or OpenAI body now and then,
// recycled or not. Every body made must be byte for byte the one a thread
// that recycled nothing makes; a difference aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "llm/anthropic.h"
#include "llm/openai.h"
#include "llm/types.h"

using namespace mates;
using namespace mates::llm;

namespace {

// Reads the program's bytes; zeros once they run out.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  uint8_t Next() { return at_ < size_ ? data_[at_++] : 0; }
  // A short string: a length byte (at most 15), then that many bytes.
  std::string Text() {
    std::string s;
    for (int n = Next() % 16; n > 0; --n) s.push_back(static_cast<char>(Next()));
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

std::string MakeBody(const Request& r, bool openai) {
  return DumpJson(openai ? OpenAIRequestBody(r, "m", false) : AnthropicRequestBody(r, "m", false));
}

// The body as a thread that has recycled nothing makes it.
std::string FreshBody(const Request& r, bool openai) {
  std::string out;
  std::thread([&] { out = MakeBody(r, openai); }).join();
  return out;
}

ContentBlock SomeBlock(Bytes& in, Role role) {
  const std::string id = "t" + std::to_string(in.Next() % 8);
  switch (in.Next() % 3) {
    case 0:
      return ContentBlock::Text(in.Text());
    case 1:
      if (role == Role::kAssistant)
        return ContentBlock::ToolUse(id, "tool" + std::to_string(in.Next() % 3), "{}");
      return ContentBlock::ToolResult(id, in.Text(), (in.Next() & 1) != 0);
    default:
      if (role == Role::kAssistant) {
        return ContentBlock::ToolUse(id, "bash",
                                     "{\"command\":\"" + std::to_string(in.Next()) + "\"}");
      }
      return ContentBlock::ToolResult(id, in.Text(), false);
  }
}

void Check(const Request& r, bool openai, const std::string& made) {
  if (made == FreshBody(r, openai)) return;
  std::fprintf(stderr, "a recycled %s body differs from a fresh one\n",
               openai ? "OpenAI" : "Anthropic");
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  Request r;
  r.tools = {
      {"bash", "Run a command", R"({"type":"object","properties":{"command":{"type":"string"}}})"},
      {"read_file", "Read a file", R"({"type":"object"})"}};
  int bodies = 0;
  while (!in.done() && bodies < 24) {
    switch (in.Next() % 10) {
      case 0:
      case 1: {  // a turn more
        ChatMessage m;
        m.role = r.messages.empty() || r.messages.back().role == Role::kAssistant
                     ? Role::kUser
                     : Role::kAssistant;
        for (int n = 1 + in.Next() % 3; n > 0; --n) m.content.push_back(SomeBlock(in, m.role));
        r.messages.push_back(std::move(m));
        break;
      }
      case 2: {  // a block edited in place (microcompaction, a flag)
        if (r.messages.empty()) break;
        ChatMessage& m = r.messages[in.Next() % r.messages.size()];
        if (m.content.empty()) break;
        ContentBlock& b = m.content[in.Next() % m.content.size()];
        if (in.Next() & 1) {
          b.text = in.Text();
        } else {
          b.is_error = !b.is_error;
        }
        break;
      }
      case 3:  // cut (compaction)
        r.messages.resize(r.messages.empty() ? 0 : in.Next() % (r.messages.size() + 1));
        break;
      case 4:
        r.system = in.Text();
        break;
      case 5:
        r.cache = !r.cache;
        break;
      case 6:  // the tools change
        if (in.Next() & 1 && !r.tools.empty()) {
          r.tools.pop_back();
        } else if (r.tools.size() < 4) {
          r.tools.push_back(
              {"tool" + std::to_string(in.Next() % 3), in.Text(), R"({"type":"object"})"});
        }
        break;
      default: {  // a body made, checked, and given back or not
        const bool openai = (in.Next() & 1) != 0;
        std::string made;
        if (openai) {
          Json body = OpenAIRequestBody(r, "m", false);
          made = DumpJson(body);
          if (in.Next() % 4 != 0) RecycleOpenAIBody(r, std::move(body));
        } else {
          Json body = AnthropicRequestBody(r, "m", false);
          made = DumpJson(body);
          if (in.Next() % 4 != 0) RecycleAnthropicBody(r, std::move(body));
        }
        Check(r, openai, made);
        ++bodies;
        break;
      }
    }
  }
  return 0;
}
