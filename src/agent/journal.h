// Journal: an agent's conversation on disk, .teams/<team>/agents/<name>.jsonl,
// one JSON line per event, appended as they happen, so that a restarted
// process resumes the conversation instead of losing it.
//
//   {"kind":"message","message":{role, content},"delivered":["m-…"]}
//        content added to the conversation (consecutive lines of one role
//        are one message); `delivered` names the inbox messages it carries,
//        in the same write, so a crash can neither lose nor repeat them
//   {"kind":"compact","messages":[…],"transcript":"…"}   the conversation
//        after a compaction (replaces what came before)
//   {"kind":"usage","usage":{…}}   one model call's usage
//   {"kind":"delivered","ids":[…]}   ids of inbox messages already in the
//        conversation (written when a journal moves, after its compact line)
//
// A line cut by a crash (no newline) is dropped when the journal is read.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/status.h"
#include "llm/types.h"

namespace mates::agent {

namespace fs = std::filesystem;

struct JournalState {
  std::vector<llm::ChatMessage> messages;
  std::set<std::string> delivered;  // inbox message ids already taken in
  llm::Usage usage;
  int calls = 0;
  int compactions = 0;
};

class Journal {
 public:
  // Opens (creating) the journal; a torn last line is cut off first.
  static Result<Journal> Open(const fs::path& path);

  Journal(Journal&&) = default;
  Journal& operator=(Journal&&) = default;

  Status AppendMessage(const llm::ChatMessage& m, const std::vector<std::string>& delivered = {});
  Status AppendCompaction(const std::vector<llm::ChatMessage>& messages,
                          const std::string& transcript_path);
  Status AppendUsage(const llm::Usage& u);
  Status AppendDelivered(const std::vector<std::string>& ids);

  // Everything the journal holds, replayed.
  static Result<JournalState> Load(const fs::path& path);

  const fs::path& path() const { return path_; }

 private:
  Journal(fs::path path, ScopedFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  Status Append(const std::string& line);

  fs::path path_;
  ScopedFd fd_;
};

}  // namespace mates::agent
