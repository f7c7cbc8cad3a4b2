// What a pane shows, read as an agent CLI's screen (pure functions, tested
// on their own; the exchange in exchange.cc drives them): the lines of a
// capture, where the CLI's input prompt is and whether it says it is busy,
// the echo of what was typed, and the reply between that echo and the
// agent's marker without the CLI's chrome (prompt rows, rules, a TUI's
// message bullet).
#pragma once

#include <regex>
#include <string>
#include <vector>

namespace mates::tmux {

// The lines of a capture, without trailing blank lines (U+00A0 read as a
// space: Claude Code draws its prompt as "❯\u00a0").
std::vector<std::string> CaptureLines(const std::string& capture);
// The reply that follows the echo of `input` (its last line, whole or as
// the tail a TUI wrapped) from line `start` on, ending at `marker` (false
// if not there yet), without the CLI's chrome.
bool FindReply(const std::vector<std::string>& lines, size_t start, const std::string& input,
               const std::string& marker, const std::string& ready_pattern, std::string* reply);

// The pieces both are made of.
std::string TrimRight(std::string s);
std::string Trim(const std::string& s);
// The last non-empty line of what is typed: what its echo ends with.
std::string LastInputLine(const std::string& input);
bool StartsWith(const std::string& s, const std::string& p);
bool EndsWith(const std::string& s, const std::string& p);
// Whether a screen row is (or ends) the echo of `last`.
bool EndsEcho(const std::string& row, const std::string& last);
// The indexes of the bottom rows a prompt may be among.
std::vector<size_t> BottomRows(const std::vector<std::string>& lines);
// The row of the input prompt among the bottom rows, npos if none.
size_t PromptRow(const std::vector<std::string>& lines, const std::regex& ready);
// Whether the bottom rows say the CLI is still working.
bool LooksBusy(const std::vector<std::string>& lines, const std::string& busy_pattern);
// The first row that differs (a.size() if b only grew).
size_t FirstDifference(const std::vector<std::string>& a, const std::vector<std::string>& b);
// A horizontal rule a TUI draws.
bool IsRule(const std::string& row);
// `body` without the CLI's chrome, as one text.
std::string Unchrome(const std::vector<std::string>& body, const std::regex& ready);

}  // namespace mates::tmux
