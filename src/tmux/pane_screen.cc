#include "tmux/pane_screen.h"

#include <cstring>

#include <regex>

namespace mates::tmux {

std::string TrimRight(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  return s;
}

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// The input's last non-empty line: its echo ends the input.
std::string LastInputLine(const std::string& input) {
  std::vector<std::string> lines = CaptureLines(input);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string t = Trim(*it);
    if (!t.empty()) return t;
  }
  return "";
}

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool EndsWith(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// A row that ends the echo of an input whose last line is `last`: it holds
// that line whole, or it is the tail the CLI wrapped onto a row of its own
// (TUIs such as Claude Code wrap long input at word boundaries themselves).
bool EndsEcho(const std::string& row, const std::string& last) {
  if (last.empty()) return false;
  if (row.find(last) != std::string::npos) return true;
  std::string t = Trim(row);
  for (const char* glyph : {">", "❯", "›", "│", "|"}) {
    if (StartsWith(t, glyph)) t = Trim(t.substr(std::string(glyph).size()));
  }
  return !t.empty() && EndsWith(last, t);
}

// How many non-empty rows at the bottom of a pane belong to the CLI's
// input area (its prompt, rules around it, a status line under it).
constexpr size_t kBottomRows = 6;

// The indexes of the pane's bottom non-empty rows, the lowest row first.
std::vector<size_t> BottomRows(const std::vector<std::string>& lines) {
  std::vector<size_t> rows;
  for (size_t i = lines.size(); i-- > 0 && rows.size() < kBottomRows;) {
    if (!Trim(lines[i]).empty()) rows.push_back(i);
  }
  return rows;
}

// The CLI's input prompt among the pane's bottom rows, or npos.
size_t PromptRow(const std::vector<std::string>& lines, const std::regex& ready) {
  for (size_t i : BottomRows(lines)) {
    if (std::regex_search(lines[i], ready)) return i;
  }
  return std::string::npos;
}

// The CLI says it is still working (Claude Code: "esc to interrupt").
bool LooksBusy(const std::vector<std::string>& lines, const std::string& busy_pattern) {
  if (busy_pattern.empty()) return false;
  std::regex busy(busy_pattern);
  for (size_t i : BottomRows(lines)) {
    if (std::regex_search(lines[i], busy)) return true;
  }
  return false;
}

// The first row that differs between two captures of one pane: everything
// above it is older than the send.
size_t FirstDifference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// A rule drawn with box characters, or nothing: the CLI's, not the reply.
bool IsRule(const std::string& row) {
  std::string t = Trim(row);
  if (t.empty()) return false;
  for (const char* piece : {"─", "━", "═", "-"}) {
    std::string p = piece;
    std::string rest = t;
    while (StartsWith(rest, p)) rest = rest.substr(p.size());
    if (rest.empty()) return true;
  }
  return false;
}

// A reply's rows without the CLI's chrome: prompt lines, rules, and the
// bullet a TUI puts before each message ("● " and "⏺ " in Claude Code, "✦ "
// two columns in, in Qwen Code; continuation rows indented under it).
std::string Unchrome(const std::vector<std::string>& body, const std::regex& ready) {
  std::vector<std::string> rows;
  for (const auto& l : body) {
    if (std::regex_search(l, ready) || IsRule(l)) continue;
    rows.push_back(l);
  }
  std::string indent;  // before the bullet
  std::string bullet;  // "" = none
  for (const auto& r : rows) {
    if (Trim(r).empty()) continue;
    size_t lead = r.find_first_not_of(' ');
    for (const char* b : {"● ", "⏺ ", "✦ "}) {
      if (r.compare(lead, std::strlen(b), b) == 0) {
        indent = r.substr(0, lead);
        bullet = b;
      }
    }
    break;
  }
  // The bullet and its space take two columns.
  const std::string under = indent + "  ";
  std::string out;
  for (auto r : rows) {
    if (!bullet.empty()) {
      if (StartsWith(r, indent + bullet)) r = r.substr(indent.size() + bullet.size());
      else if (StartsWith(r, under)) r = r.substr(under.size());
    }
    out += r + "\n";
  }
  return Trim(out);
}

std::vector<std::string> CaptureLines(const std::string& raw) {
  // U+00A0 reads as the space it shows (Claude Code's prompt is "❯\u00a0").
  std::string capture;
  capture.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\xC2' && i + 1 < raw.size() && raw[i + 1] == '\xA0') {
      capture += ' ';
      ++i;
    } else {
      capture += raw[i];
    }
  }
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= capture.size()) {
    size_t nl = capture.find('\n', start);
    if (nl == std::string::npos) {
      if (start < capture.size()) lines.push_back(TrimRight(capture.substr(start)));
      break;
    }
    lines.push_back(TrimRight(capture.substr(start, nl - start)));
    start = nl + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

bool FindReply(const std::vector<std::string>& lines, size_t start, const std::string& input,
               const std::string& marker, const std::string& ready_pattern, std::string* reply) {
  // Where the echo of the input ends (the prompt row itself when the CLI
  // shows no echo we can find, e.g. a "[Pasted text]" placeholder).
  size_t echo_end = start;
  std::string last = LastInputLine(input);
  for (size_t i = start; i < lines.size(); ++i) {
    if (EndsEcho(lines[i], last)) {
      echo_end = i;
      break;
    }
  }
  std::regex ready(ready_pattern);
  for (size_t i = echo_end + 1; i < lines.size(); ++i) {
    size_t at = lines[i].find(marker);
    if (at == std::string::npos) continue;
    std::vector<std::string> body(lines.begin() + static_cast<long>(echo_end) + 1, lines.begin() + static_cast<long>(i));
    std::string marker_line = TrimRight(lines[i].substr(0, at) + lines[i].substr(at + marker.size()));
    if (!Trim(marker_line).empty()) body.push_back(marker_line);
    *reply = Unchrome(body, ready);
    return true;
  }
  return false;
}

}  // namespace mates::tmux
