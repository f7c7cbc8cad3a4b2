#include "agent/conversation.h"

#include "agent/frames.h"

#include <algorithm>
#include <set>

namespace mates::agent {
namespace {

bool NonEmptyBlock(const ContentBlock& b) {
  return b.type != llm::BlockType::kText || !b.text.empty();
}

}  // namespace

void Conversation::AddUser(std::vector<ContentBlock> blocks) {
  std::erase_if(blocks, [](const ContentBlock& b) { return !NonEmptyBlock(b); });
  if (blocks.empty()) return;
  // Tool results first: the API reads them as answers to the previous turn.
  std::stable_partition(blocks.begin(), blocks.end(), [](const ContentBlock& b) {
    return b.type == llm::BlockType::kToolResult;
  });
  if (!messages_.empty() && messages_.back().role == llm::Role::kUser) {
    auto& content = messages_.back().content;
    // Keep results ahead of text within the merged turn too.
    auto first_text = std::find_if(content.begin(), content.end(), [](const ContentBlock& b) {
      return b.type != llm::BlockType::kToolResult;
    });
    for (auto& b : blocks) {
      if (b.type == llm::BlockType::kToolResult) {
        first_text = content.insert(first_text, std::move(b)) + 1;
      } else {
        content.push_back(std::move(b));
      }
    }
    return;
  }
  messages_.push_back({llm::Role::kUser, std::move(blocks)});
}

void Conversation::AddUserText(const std::string& text) {
  if (text.empty()) return;
  AddUser({ContentBlock::Text(text)});
}

void Conversation::AddAssistant(std::vector<ContentBlock> blocks) {
  std::erase_if(blocks, [](const ContentBlock& b) { return !NonEmptyBlock(b); });
  if (blocks.empty()) blocks.push_back(ContentBlock::Text("(no reply)"));
  if (!messages_.empty() && messages_.back().role == llm::Role::kAssistant) {
    for (auto& b : blocks) messages_.back().content.push_back(std::move(b));
    return;
  }
  messages_.push_back({llm::Role::kAssistant, std::move(blocks)});
}

std::vector<std::string> Conversation::PendingToolUses() const {
  std::vector<std::string> pending;
  for (size_t i = messages_.size(); i-- > 0;) {
    if (messages_[i].role != llm::Role::kAssistant) continue;
    std::set<std::string> answered;
    if (i + 1 < messages_.size()) {
      for (const auto& b : messages_[i + 1].content) {
        if (b.type == llm::BlockType::kToolResult) answered.insert(b.tool_use_id);
      }
    }
    for (const auto& b : messages_[i].content) {
      if (b.type == llm::BlockType::kToolUse && answered.count(b.id) == 0) pending.push_back(b.id);
    }
    break;  // only the last assistant message can be unanswered
  }
  return pending;
}

void Conversation::AnswerAllPending(const std::string& why) {
  std::vector<ContentBlock> results;
  for (const auto& id : PendingToolUses()) results.push_back(ContentBlock::ToolResult(id, why, true));
  AddUser(std::move(results));
}

Status Conversation::CheckReadyForCall() const {
  if (messages_.empty()) return Status::Internal("conversation is empty");
  if (messages_.front().role != llm::Role::kUser) {
    return Status::Internal("conversation does not start with the user");
  }
  if (messages_.back().role != llm::Role::kUser) {
    return Status::Internal("conversation does not end with the user");
  }
  for (size_t i = 0; i < messages_.size(); ++i) {
    const auto& m = messages_[i];
    if (m.content.empty()) return Status::Internal("message " + std::to_string(i) + " is empty");
    if (i > 0 && m.role == messages_[i - 1].role) {
      return Status::Internal("messages " + std::to_string(i - 1) + " and " + std::to_string(i) +
                              " have the same role");
    }
    if (m.role != llm::Role::kUser) continue;
    std::set<std::string> calls;
    if (i > 0) {
      for (const auto& b : messages_[i - 1].content) {
        if (b.type == llm::BlockType::kToolUse) calls.insert(b.id);
      }
    }
    std::set<std::string> answered;
    for (const auto& b : m.content) {
      if (b.type != llm::BlockType::kToolResult) continue;
      if (calls.count(b.tool_use_id) == 0) {
        return Status::Internal("orphan tool_result " + b.tool_use_id + " in message " +
                                std::to_string(i));
      }
      answered.insert(b.tool_use_id);
    }
    for (const auto& id : calls) {
      if (answered.count(id) == 0) {
        return Status::Internal("tool_use " + id + " is not answered in message " + std::to_string(i));
      }
    }
  }
  return Status::Ok();
}

std::string FormatTeammateMessage(const Message& m, const std::string& team) {
  // Everything but mates' own markup goes through NeutraliseFrames: no
  // content can close this frame or open another (DESIGN §19).
  const auto attr = [](const std::string& v) { return FrameAttribute(v); };
  std::string out = "<teammate-message teammate_id=\"" + attr(m.sender) + "\"";
  if (!team.empty()) out += " team=\"" + attr(team) + "\"";
  out += " type=\"" + std::string(MessageTypeName(m.type)) + "\"";
  if (!m.summary.empty()) out += " summary=\"" + attr(m.summary) + "\"";
  if (!m.request_id.empty()) out += " request_id=\"" + attr(m.request_id) + "\"";
  if (m.approve.has_value()) out += std::string(" approve=\"") + (*m.approve ? "true" : "false") + "\"";
  out += ">\n" + NeutraliseFrames(m.content);
  if (!m.feedback.empty() && m.feedback != m.content) out += "\nFeedback: " + NeutraliseFrames(m.feedback);
  out += "\n</teammate-message>";
  return out;
}

}  // namespace mates::agent
