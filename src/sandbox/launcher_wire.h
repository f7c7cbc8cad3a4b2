// The launcher's wire (DESIGN §18, §22): one line per request and per
// answer between a host and `mates-relay --launcher` (sandbox/
// launcher_main.cc), kept running in an agent's sandbox so that its bash
// commands and its hooks start there without a bubblewrap each.
//
//   run:     ID \t TIMEOUT_MS \t MAX_OUTPUT \t FLAGS \t ENV \t COMMAND \t STDIN \n
//   kill:    ID \t kill \n
//   answer:  ID \t EXIT \t SIGNAL \t TIMED_OUT \t DROPPED \t STDOUT \t STDERR \n
//
// FLAGS: letters — b: `/bin/bash -c` (else `/bin/sh -c`); m: stderr into
// stdout; c: past MAX_OUTPUT keep the head and the tail (else the head).
// ENV: the command's environment, its entries joined by NUL bytes ("" =
// the launcher's own); the sandbox's own variables (TMPDIR, the gate, the
// proxy) win over it. DROPPED: the bytes of output not kept. A kill
// request kills the job's process group; its answer comes as usual.
// Text fields are escaped (\\ \n \t) so that no field holds a tab and no
// line a newline. Header-only, with no library but the C++ one: both the
// host and the launcher use it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mates::sandbox::launcher {

inline std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out;
}

inline std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char n = s[++i];
    out += n == 'n' ? '\n' : n == 't' ? '\t' : n;
  }
  return out;
}

// `line` cut at its tabs: views into it (it must outlive them).
inline std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t at = 0;
  for (;;) {
    size_t tab = line.find('\t', at);
    if (tab == std::string_view::npos) {
      out.push_back(line.substr(at));
      return out;
    }
    out.push_back(line.substr(at, tab - at));
    at = tab + 1;
  }
}

}  // namespace mates::sandbox::launcher
