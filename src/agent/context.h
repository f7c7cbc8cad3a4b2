// Context management (DESIGN §5, seed v5/v9).
//
// - Token estimate: ~4 characters a token over a message's JSON, scaled by
//   how far the provider's own count for the previous call was from the
//   estimate then (so a model's real tokenisation is tracked).
// - Microcompact, before every call: tool results older than the most recent
//   `keep_recent_tool_results`, longer than `microcompact_min_chars`, become
//   a short marker naming the tool. Idempotent.
// - Auto-compact, when the estimate passes the budget (default 75 % of the
//   model's window): the full transcript is saved first; the summary is
//   written by the model from the *whole* conversation; the newest messages
//   (from an assistant turn, so every tool result keeps its call) stay
//   verbatim; the agent's identity opens the new conversation (seed v9).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "llm/provider.h"
#include "llm/types.h"

namespace mates::agent {

namespace fs = std::filesystem;

struct ContextPolicy {
  int64_t budget_tokens = 0;  // 0 = 75 % of the model's context window
  int keep_recent_tool_results = 3;
  size_t microcompact_min_chars = 2000;
  // Old results are elided in batches, when this many are due or they hold
  // this many characters: each elision rewrites an old message, so the
  // prompt cache is read only up to it and written again from there (one
  // at a time, that was every call).
  int microcompact_batch = 4;
  size_t microcompact_batch_chars = 64 << 10;
  int keep_recent_messages = 4;
};

int64_t EstimateTokens(const llm::ChatMessage& m);
int64_t EstimateTokens(const std::vector<llm::ChatMessage>& messages);

// Elides large tool results older than the newest keep_recent_tool_results,
// in batches (see ContextPolicy). Returns how many were elided.
int Microcompact(std::vector<llm::ChatMessage>* messages, const ContextPolicy& policy);

struct CompactRequest {
  const std::vector<llm::ChatMessage>* messages = nullptr;
  std::string system;                // the agent's system prompt
  std::vector<llm::ToolDef> tools;   // the API requires tools when history uses them
  std::string model;
  std::string agent_id;
  std::string identity;              // who the agent is, re-injected
  fs::path transcript_path;          // where the full conversation is saved
  ContextPolicy policy;
};

struct CompactResult {
  std::vector<llm::ChatMessage> messages;
  int64_t tokens_before = 0;
  int64_t tokens_after = 0;
  llm::Usage usage;  // of the summary call
};

Result<CompactResult> AutoCompact(const CompactRequest& request, llm::Provider& provider,
                                  llm::CancelToken* cancel);

// Writes every message as a JSON line (the transcript kept before compaction).
Status WriteTranscript(const fs::path& path, const std::vector<llm::ChatMessage>& messages);

}  // namespace mates::agent
