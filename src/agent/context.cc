#include "agent/context.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "agent/frames.h"
#include "core/files.h"

namespace mates::agent {

namespace {

// A compaction's summary is at most this long (the model's reply).
constexpr int64_t kSummaryMaxTokens = 4096;

}  // namespace

int64_t EstimateTokens(const llm::ChatMessage& m) {
  size_t chars = 8;  // role and framing
  for (const auto& b : m.content) chars += b.text.size() + b.input_json.size() + b.name.size() + 24;
  return static_cast<int64_t>(chars / 4);
}

int64_t EstimateTokens(const std::vector<llm::ChatMessage>& messages) {
  int64_t t = 0;
  for (const auto& m : messages) t += EstimateTokens(m);
  return t;
}

int Microcompact(std::vector<llm::ChatMessage>* messages, const ContextPolicy& policy) {
  // Which tool each call was, to name it in the marker.
  std::map<std::string, std::string> tool_of;
  for (const auto& m : *messages) {
    for (const auto& b : m.content) {
      if (b.type == llm::BlockType::kToolUse) tool_of[b.id] = b.name;
    }
  }
  std::vector<llm::ContentBlock*> due;
  size_t due_chars = 0;
  int seen = 0;
  for (auto m = messages->rbegin(); m != messages->rend(); ++m) {
    for (auto b = m->content.rbegin(); b != m->content.rend(); ++b) {
      if (b->type != llm::BlockType::kToolResult) continue;
      if (++seen <= policy.keep_recent_tool_results) continue;
      if (b->text.size() < policy.microcompact_min_chars || b->text.rfind("[elided:", 0) == 0) continue;
      due.push_back(&*b);
      due_chars += b->text.size();
    }
  }
  if (due.empty() ||
      (static_cast<int>(due.size()) < policy.microcompact_batch && due_chars < policy.microcompact_batch_chars)) {
    return 0;
  }
  for (llm::ContentBlock* b : due) {
    std::string tool = tool_of.count(b->tool_use_id) ? tool_of[b->tool_use_id] : "a tool";
    b->text = "[elided: an earlier result of " + tool + " (" + std::to_string(b->text.size()) +
              " characters) was removed to save context; run the tool again if you need it]";
  }
  return static_cast<int>(due.size());
}

Status WriteTranscript(const fs::path& path, const std::vector<llm::ChatMessage>& messages) {
  std::string data;
  for (const auto& m : messages) data += DumpJson(llm::MessageToJson(m)) + "\n";
  MATES_RETURN_IF_ERROR(EnsureDir(path.parent_path()));
  return WriteFileAtomic(path, data);
}

Result<CompactResult> AutoCompact(const CompactRequest& req, llm::Provider& provider,
                                  llm::CancelToken* cancel) {
  const auto& msgs = *req.messages;
  if (msgs.empty()) return Status::FailedPrecondition("nothing to compact");
  // 1. The full transcript, before anything is lost.
  MATES_RETURN_IF_ERROR(WriteTranscript(req.transcript_path, msgs));

  // 2. The summary, written by the model from the whole conversation.
  llm::Request summary_req;
  summary_req.model = req.model;
  summary_req.agent_id = req.agent_id;
  summary_req.max_tokens = kSummaryMaxTokens;
  summary_req.tools = req.tools;
  summary_req.system =
      req.system + "\n\n---\nYou are now writing a working summary of your own conversation, "
      "which will replace it: the conversation has grown too long to keep.";
  summary_req.messages = msgs;
  const std::string ask =
      "Write a summary of this whole conversation for yourself to continue from: the goal, "
      "what has been decided, what has been done (files, commands, results, task ids, messages "
      "sent and received), what is in progress and what remains. Be specific: names, paths, "
      "ids. Do not call tools; answer with the summary text only.";
  if (summary_req.messages.back().role == llm::Role::kUser) {
    summary_req.messages.back().content.push_back(llm::ContentBlock::Text(ask));
  } else {
    summary_req.messages.push_back({llm::Role::kUser, {llm::ContentBlock::Text(ask)}});
  }
  MATES_ASSIGN_OR_RETURN(llm::Response r, provider.Complete(summary_req, {}, cancel));
  std::string summary = r.Text();
  if (summary.empty()) return Status::Unavailable("the model wrote no summary");

  // 3. The newest messages stay verbatim, from an assistant turn so that
  // every tool result in them keeps its call.
  const size_t n = msgs.size();
  size_t from = n;
  size_t window = static_cast<size_t>(std::max(0, req.policy.keep_recent_messages));
  for (size_t i = n > window ? n - window : 0; i < n; ++i) {
    if (msgs[i].role == llm::Role::kAssistant) {
      from = i;
      break;
    }
  }
  if (from == n) {
    for (size_t i = n; i-- > 0;) {
      if (msgs[i].role == llm::Role::kAssistant) {
        from = i;
        break;
      }
    }
  }
  CompactResult out;
  out.usage = r.usage;
  std::string opening = req.identity + "\n\n<conversation-summary transcript=\"" +
                        FrameAttribute(req.transcript_path.string()) + "\">\n" + NeutraliseFrames(summary) +
                        "\n</conversation-summary>";
  std::vector<llm::ContentBlock> first = {llm::ContentBlock::Text(opening)};
  if (from == n) {
    // No assistant turn at all: the user's words follow the summary.
    for (const auto& m : msgs) {
      for (const auto& b : m.content) {
        if (b.type == llm::BlockType::kText) first.push_back(b);
      }
    }
  }
  out.messages.push_back({llm::Role::kUser, std::move(first)});
  for (size_t i = from; i < n; ++i) out.messages.push_back(msgs[i]);
  out.tokens_before = EstimateTokens(msgs);
  out.tokens_after = EstimateTokens(out.messages);
  return out;
}

}  // namespace mates::agent
