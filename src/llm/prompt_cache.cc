#include "llm/prompt_cache.h"

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <vector>

namespace mates::llm {

namespace {

constexpr size_t kMaxPrefixesPerAgent = 4096;
constexpr size_t kMaxPromptsPerAgent = 8;
constexpr size_t kMaxAgents = 1024;

// FNV-1a, continued block after block: the hash of a prefix.
uint64_t Mix(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  h ^= 0xff;  // a block boundary
  return h * 1099511628211ULL;
}
constexpr uint64_t kFnvBasis = 14695981039346656037ULL;

struct Block {
  std::string text;
  bool breakpoint = false;
};

// A block as the cache sees it: its content without the marker.
Block Cached(const std::string& tag, const Json& j) {
  Block b;
  if (j.is_object() && j.contains("cache_control")) {
    Json copy = j;
    copy.erase("cache_control");
    b.breakpoint = true;
    b.text = tag + DumpJson(copy);
  } else {
    b.text = tag + (j.is_string() ? j.get<std::string>() : DumpJson(j));
  }
  return b;
}

std::vector<Block> AnthropicBlocks(const Json& body) {
  std::vector<Block> out;
  auto field = [&](const char* key) -> const Json* {
    auto it = body.find(key);
    return it == body.end() ? nullptr : &*it;
  };
  if (const Json* tools = field("tools"); tools != nullptr && tools->is_array()) {
    for (const auto& t : *tools) out.push_back(Cached("tool:", t));
  }
  if (const Json* system = field("system"); system != nullptr) {
    if (system->is_array()) {
      for (const auto& b : *system) out.push_back(Cached("system:", b));
    } else if (system->is_string()) {
      out.push_back(Cached("system:", *system));
    }
  }
  if (const Json* messages = field("messages"); messages != nullptr && messages->is_array()) {
    for (const auto& m : *messages) {
      if (!m.is_object()) continue;
      std::string role = m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
      auto c = m.find("content");
      if (c == m.end()) continue;
      if (c->is_array()) {
        for (const auto& b : *c) out.push_back(Cached(role + ":", b));
      } else {
        out.push_back(Cached(role + ":", *c));
      }
    }
  }
  return out;
}

// The prompt as cached: the parts that come first (tools, the system
// prompt) whole, then each turn of `turns` on a line.
std::string PromptOf(const Json& body, std::initializer_list<const char*> first, const char* turns) {
  std::string out;
  for (const char* key : first) {
    auto it = body.find(key);
    if (it != body.end()) out += std::string(key) + ":" + DumpJson(*it) + "\n";
  }
  auto list = body.find(turns);
  if (list != body.end() && list->is_array()) {
    for (const auto& m : *list) out += DumpJson(m) + "\n";
  } else if (list != body.end()) {
    out += DumpJson(*list) + "\n";
  }
  return out;
}

int64_t TokensOf(size_t chars) { return static_cast<int64_t>(chars / 4); }

}  // namespace

PromptCache::PromptCache(Clock now) : now_(std::move(now)) {}

PromptCache::AgentCache& PromptCache::For(const std::string& agent) {
  if (agents_.size() >= kMaxAgents && agents_.count(agent) == 0) agents_.clear();  // a flood of names
  return agents_[agent];
}

Usage PromptCache::Anthropic(const std::string& agent, const Json& body) {
  const std::vector<Block> blocks = AnthropicBlocks(body);
  std::vector<uint64_t> hash(blocks.size());
  std::vector<size_t> chars(blocks.size());  // through block i
  uint64_t h = kFnvBasis;
  size_t c = 0;
  int last_breakpoint = -1;
  for (size_t i = 0; i < blocks.size(); ++i) {
    h = Mix(h, blocks[i].text);
    c += blocks[i].text.size();
    hash[i] = h;
    chars[i] = c;
    if (blocks[i].breakpoint) last_breakpoint = static_cast<int>(i);
  }
  Usage u;
  const int64_t total = TokensOf(c);
  if (last_breakpoint < 0) {
    u.input_tokens = total;
    return u;
  }
  const double now = now_();
  std::lock_guard<std::mutex> lock(mu_);
  AgentCache& cache = For(agent);
  std::erase_if(cache.prefixes, [now](const auto& e) { return e.second <= now; });
  auto live = [&](int i) {
    auto it = cache.prefixes.find(hash[static_cast<size_t>(i)]);
    return it != cache.prefixes.end();
  };
  int hit = -1;
  for (int b = 0; b <= last_breakpoint; ++b) {
    if (!blocks[static_cast<size_t>(b)].breakpoint) continue;
    for (int k = b; k >= 0 && k > b - kLookbackBlocks; --k) {
      if (live(k)) {
        hit = std::max(hit, k);
        break;
      }
    }
  }
  const int64_t read = hit < 0 ? 0 : TokensOf(chars[static_cast<size_t>(hit)]);
  const int64_t through_last = TokensOf(chars[static_cast<size_t>(last_breakpoint)]);
  u.cache_read_input_tokens = read;
  u.cache_creation_input_tokens = through_last - read;
  u.input_tokens = total - through_last;
  if (cache.prefixes.size() + blocks.size() > kMaxPrefixesPerAgent) cache.prefixes.clear();
  if (hit >= 0) cache.prefixes[hash[static_cast<size_t>(hit)]] = now + kTtlSeconds;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].breakpoint) cache.prefixes[hash[i]] = now + kTtlSeconds;
  }
  return u;
}

Usage PromptCache::OpenAI(const std::string& agent, const Json& body) {
  return Automatic(agent, PromptOf(body, {"tools"}, "messages"));
}

Usage PromptCache::Responses(const std::string& agent, const Json& body) {
  return Automatic(agent, PromptOf(body, {"tools", "instructions"}, "input"));
}

Usage PromptCache::Gemini(const std::string& agent, const Json& body) {
  return Automatic(agent, PromptOf(body, {"tools", "systemInstruction"}, "contents"));
}

Usage PromptCache::Automatic(const std::string& agent, const std::string& prompt) {
  Usage u;
  u.input_tokens = TokensOf(prompt.size());
  const double now = now_();
  std::lock_guard<std::mutex> lock(mu_);
  AgentCache& cache = For(agent);
  std::erase_if(cache.prompts, [now](const auto& p) { return p.first + kTtlSeconds <= now; });
  size_t longest = 0;
  for (const auto& [when, seen] : cache.prompts) {
    auto [a, b] = std::mismatch(prompt.begin(), prompt.end(), seen.begin(), seen.end());
    longest = std::max(longest, static_cast<size_t>(a - prompt.begin()));
  }
  int64_t cached = TokensOf(longest);
  if (cached < kOpenAIMinTokens) {
    cached = 0;
  } else {
    cached = kOpenAIMinTokens + (cached - kOpenAIMinTokens) / kOpenAIStepTokens * kOpenAIStepTokens;
  }
  u.cache_read_input_tokens = cached;
  cache.prompts.emplace_back(now, prompt);
  while (cache.prompts.size() > kMaxPromptsPerAgent) cache.prompts.pop_front();
  return u;
}

}  // namespace mates::llm
