// Request bodies' arrays kept per thread between calls (anthropic.cc,
// openai.cc). An agent's next call sends the same tools and the same
// conversation with a turn more: the arrays of the body it sent last are
// taken back, and the next body takes of them what it has in common with
// them (each part compared whole), making only the rest. Making every
// block again, and freeing it after, was most of a body's making, and it
// grew with the conversation. Per thread: each agent calls on its own, so
// the arrays are lent and taken back without a lock. One of these per body
// format: a thread's Anthropic arrays are never an OpenAI body's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "llm/types.h"

namespace mates::llm {

// A body's tools array and what it was made of: taken whole, for the same
// tools made the same way (`variant`: a format's own switch, such as
// Anthropic's cache breakpoint on the last tool).
struct RecycledTools {
  std::vector<ToolDef> defs;
  int variant = 0;
  std::optional<Json> array;
};

inline bool SameTools(const std::vector<ToolDef>& a, const std::vector<ToolDef>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](const ToolDef& x, const ToolDef& y) {
           return x.name == y.name && x.description == y.description &&
                  x.input_schema_json == y.input_schema_json;
         });
}

// The tools array for `tools`: the one recycled, if it was made of the
// same tools the same way, else make(tools) (a whole array).
template <typename MakeFn>
Json TakeOrMakeTools(RecycledTools& r, const std::vector<ToolDef>& tools, int variant,
                     MakeFn make) {
  if (r.array && r.variant == variant && SameTools(r.defs, tools)) {
    Json array = std::move(*r.array);
    r.array.reset();
    return array;
  }
  return make(tools);
}

// Takes `array` back, made of `tools` by `variant` (unless it is not one of
// theirs any more: an array of another size).
inline void TakeBackTools(RecycledTools& r, const std::vector<ToolDef>& tools, int variant,
                          Json* array) {
  if (tools.empty() || !array->is_array() || array->size() != tools.size()) return;
  if (!SameTools(r.defs, tools)) r.defs = tools;
  r.variant = variant;
  r.array = std::move(*array);
}

// A body's messages array and what it was made of: `head` entries made
// from `head_key` (OpenAI's system message; none for Anthropic), then each
// message's entries (one for Anthropic; for OpenAI a user turn's tool
// results and text, so several or none), `ends[i]` the array's size after
// message i's. Kept for conversations of up to kMaxRecycledBytes of text
// (the copy and its JSON cost a few times that per thread, and a hundred
// teammates must not hold hundreds of megabytes for it); beyond, each body
// is made whole.
struct RecycledMessages {
  std::string head_key;
  size_t head = 0;
  std::vector<ChatMessage> source;
  std::vector<size_t> ends;
  const void* lent_for = nullptr;  // the request of the body made last
  std::optional<Json> array;
};
inline constexpr size_t kMaxRecycledBytes = 256 << 10;

inline size_t TextBytes(const std::vector<ChatMessage>& messages) {
  size_t n = 0;
  for (const auto& m : messages) {
    for (const auto& b : m.content) n += b.text.size() + b.input_json.size();
  }
  return n;
}

// The messages array of `request` (its messages, and a head made from
// `head_key` by make_head(&entries)): the recycled one's entries as far as
// both begin with the same head and messages, then make(message, &entries)
// for each of the rest (appending its entries).
template <typename MakeHeadFn, typename MakeFn>
Json TakeOrMakeMessages(RecycledMessages& r, const Request& request, const std::string& head_key,
                        MakeHeadFn make_head, MakeFn make) {
  const std::vector<ChatMessage>& messages = request.messages;
  r.lent_for = nullptr;  // until this body is whole
  const bool keep = TextBytes(messages) + head_key.size() <= kMaxRecycledBytes;
  Json array = Json::array();
  size_t kept = 0;
  const bool reuse = r.array && keep && r.head_key == head_key;
  if (reuse) {
    const size_t n = std::min(r.source.size(), messages.size());
    while (kept < n && r.source[kept] == messages[kept]) ++kept;
    array = std::move(*r.array);
    auto& a = array.get_ref<Json::array_t&>();
    a.erase(a.begin() + static_cast<std::ptrdiff_t>(kept == 0 ? r.head : r.ends[kept - 1]),
            a.end());
  }
  r.array.reset();
  r.source.resize(kept);
  r.ends.resize(kept);
  auto& a = array.get_ref<Json::array_t&>();
  if (!reuse) {
    make_head(&a);
    r.head = a.size();
    r.head_key = keep ? head_key : std::string();
  }
  if (!keep) {
    r.source.shrink_to_fit();
    r.ends.shrink_to_fit();
  }
  a.reserve(r.head + messages.size());
  for (size_t i = kept; i < messages.size(); ++i) {
    make(messages[i], &a);
    if (keep) {
      r.source.push_back(messages[i]);
      r.ends.push_back(a.size());
    }
  }
  if (keep) r.lent_for = &request;
  return array;
}

// Takes `array` back: only the array of the body made last on this thread,
// given back with its own request, whole.
inline void TakeBackMessages(RecycledMessages& r, const Request& request, Json* array) {
  if (r.lent_for == &request && array->is_array() && r.source.size() == request.messages.size() &&
      array->size() == (r.ends.empty() ? r.head : r.ends.back())) {
    r.array = std::move(*array);
  }
  r.lent_for = nullptr;
}

}  // namespace mates::llm
