// Conversation: an agent's messages, always in a shape the API accepts.
//
// - the first message is the user's, and roles alternate: adding user
//   content after a user message merges into it (tool results, teammate
//   messages and notices of one turn travel together);
// - an assistant message with tool_use blocks must be followed by a user
//   message holding a tool_result for each of them before the next model
//   call: PendingToolUses() says which are missing, and AnswerAllPending()
//   fills any gap with an error result (after an interrupt, say);
// - no empty text block is ever added (the API refuses them).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "llm/types.h"
#include "store/message.h"

namespace mates::agent {

using llm::ChatMessage;
using llm::ContentBlock;

class Conversation {
 public:
  const std::vector<ChatMessage>& messages() const { return messages_; }
  bool empty() const { return messages_.empty(); }
  size_t size() const { return messages_.size(); }

  // Appends user content, merging into a trailing user message.
  void AddUser(std::vector<ContentBlock> blocks);
  void AddUserText(const std::string& text);
  // Appends the model's reply (an empty reply becomes a short placeholder
  // text, so the turn stays valid).
  void AddAssistant(std::vector<ContentBlock> blocks);

  // tool_use ids of the last assistant message not yet answered.
  std::vector<std::string> PendingToolUses() const;
  // Answers every pending tool_use with an error result saying `why`.
  void AnswerAllPending(const std::string& why);

  // OK if the conversation is ready for a model call: non-empty, starts
  // with the user, alternates, ends with the user, every tool_use answered
  // in the next message, no orphan tool_result.
  Status CheckReadyForCall() const;

  // For in-place rewrites that keep the shape (microcompact).
  std::vector<ChatMessage>* mutable_messages() { return &messages_; }
  // Replaces everything (compaction, resume).
  void Reset(std::vector<ChatMessage> messages) { messages_ = std::move(messages); }

  // The messages lent to a model call's request, not copied (a copy of a
  // long conversation at every call was most of what the loop spent around
  // the call); the conversation is empty until they are given back.
  std::vector<ChatMessage> Lend() { return std::exchange(messages_, {}); }
  void GiveBack(std::vector<ChatMessage> messages) { messages_ = std::move(messages); }

 private:
  std::vector<ChatMessage> messages_;
};

// The model's view of a team message (DESIGN §3, seed v8):
// <teammate-message teammate_id="…" type="…" summary="…">content</teammate-message>
// Protocol fields (request_id, approve, feedback) ride along as attributes.
// `team` (if not ""): the team it was sent in, when that is not the
// reader's (a lead's home team, read while it works in a team it made).
std::string FormatTeammateMessage(const Message& m, const std::string& team = "");

}  // namespace mates::agent
