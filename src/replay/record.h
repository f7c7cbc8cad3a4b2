// What a replay re-enacts (DESIGN §31): each agent's model calls as its
// journals recorded them — what it took in before each, the reply, the
// tool results that followed — with the times that put every agent's
// calls in one order.
//
// A lead's journal may span teams (TeamCreate moves it, TeamDelete brings
// it back): its lines from every journal it wrote are one agent's, in the
// order of their times; a compact line (a move's copy of the past, or a
// compaction) is no call and is passed over — except when the journal
// that wrote the past is not there (a bundle of a team a lead made): then
// its messages are the record's start.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "llm/types.h"

namespace mates::replay {

struct RecordedCall {
  int turn = 1;            // 1-based, the agent's turns as recorded
  double take_ts = 0;      // its last line of input before the call
  double reply_ts = 0;     // the reply's line (a failed call's turn_end)
  double effects_ts = 0;   // its tool results' line; 0 when no tool ran
  bool failed = false;     // the model call failed (its turn_end, "in": "model")
  std::string why;         // a failed call's words
  llm::Response reply;     // content, stop reason, usage and model
  // The text blocks it took in before the call (messages, notices), for
  // the ids the replay learns; how many inbox messages it had taken in by
  // then (every take so far); the task it claimed then (0: none).
  std::vector<std::string> taken;
  int64_t delivered_total = 0;
  int64_t claimed_task = 0;
  std::vector<llm::ContentBlock> results;  // the tool results that followed
};

struct RecordedAgent {
  std::string name;
  std::vector<RecordedCall> calls;
  // The record of it stops before its work did (its later journal is not
  // in the record): a call past the last is not a divergence.
  bool open_ended = false;
};

// One journal's text, and the team it is in (for the person).
struct JournalSource {
  std::string team;
  std::string text;
};

// An agent's calls from its journals (the lines of all of them, ordered by
// their times). `expand_first_compact`: the first journal's leading compact
// line holds the start of the record (its writer's journal is missing).
// Lines that are not JSON, or not the kinds a call is made of, are passed
// over; `notes` gets what was odd (a tool result for no call, say).
RecordedAgent ReadAgent(const std::string& name, const std::vector<JournalSource>& journals,
                        bool expand_first_compact, std::vector<std::string>* notes);

// The first user words of an agent's journal: a lead's goal ("" if none);
// with `after`, the first of a line at that time or later (a later
// session's goal; compact lines, which copy the past, are not read then).
std::string FirstWords(std::string_view journal_text, double after = 0);
// The team whose journal a lead's first compact line copied its past from
// ("" if the first line is not such a line): where a made team's lead came
// from.
std::string CameFrom(std::string_view journal_text);
// The teams a journal's "moved" lines name, in order, each once.
std::vector<std::string> MovedTo(std::string_view journal_text);
// The time of a journal's first line that has one (0 if none).
double FirstTime(std::string_view journal_text);

}  // namespace mates::replay
