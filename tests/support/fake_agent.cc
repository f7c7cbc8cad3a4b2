// fake_agent: a small stand-in for an agent CLI in a tmux pane, for the
// cluster tests. Like Claude Code it puts the terminal in raw mode, asks
// for bracketed paste, echoes what is typed after its "> " prompt, and
// answers on Enter. Its reply says what it received (bytes, lines, an FNV-1a
// hash, the first line) and ends with its marker.
//
//   fake_agent --marker M [--name N] [--prompt-file F] [--delay-ms D]
//              [--start-delay-ms S] [--no-marker] [--banner-marker]
//
// --start-delay-ms: the prompt shows only after S ms, and whatever was
//   typed before is lost (as with a CLI still starting up).
// --no-marker: replies without the marker (timeouts).
// --banner-marker: prints its marker in the startup banner (stale
//   scrollback that must not count as a reply).
// A line typed as "!COMMAND" is run with /bin/sh -c, as an agent runs its
// shell tool, and what it printed is part of the reply.
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

void Out(const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(STDOUT_FILENO, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string Crlf(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\n') o += "\r\n  ";
    else o += c;
  }
  return o;
}

uint32_t Fnv(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  std::string marker, name = "fake", prompt_file;
  int delay_ms = 0, start_delay_ms = 0;
  bool no_marker = false, banner_marker = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--marker") marker = next();
    else if (a == "--name") name = next();
    else if (a == "--prompt-file") prompt_file = next();
    else if (a == "--delay-ms") delay_ms = std::atoi(next().c_str());
    else if (a == "--start-delay-ms") start_delay_ms = std::atoi(next().c_str());
    else if (a == "--no-marker") no_marker = true;
    else if (a == "--banner-marker") banner_marker = true;
  }
  termios saved{};
  bool tty = ::tcgetattr(STDIN_FILENO, &saved) == 0;
  if (tty) {
    termios raw = saved;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG);
    raw.c_iflag &= ~static_cast<tcflag_t>(ICRNL | IXON);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  }
  size_t personality = 0;
  if (!prompt_file.empty()) {
    std::ifstream in(prompt_file);
    std::stringstream ss;
    ss << in.rdbuf();
    personality = ss.str().size();
  }
  Out("fake agent " + name + " (personality: " + std::to_string(personality) + " bytes)\r\n");
  if (banner_marker) Out("an old line that mentions " + marker + "\r\n");
  if (start_delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(start_delay_ms));
    if (tty) ::tcflush(STDIN_FILENO, TCIFLUSH);  // typed too early: lost
  }
  Out("\x1b[?2004h> ");
  std::string line;
  bool pasting = false;
  std::string esc;
  char c;
  while (::read(STDIN_FILENO, &c, 1) == 1) {
    if (!esc.empty() || c == '\x1b') {
      esc += c;
      if (esc == "\x1b[200~") { pasting = true; esc.clear(); }
      else if (esc == "\x1b[201~") { pasting = false; esc.clear(); }
      else if (esc.size() >= 6 || (esc.size() >= 2 && esc[1] != '[')) { esc.clear(); }
      continue;
    }
    if (!pasting && (c == '\r' || c == '\n')) {
      Out("\r\n");
      if (line == "/exit") break;
      if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      size_t lines = 1;
      for (char ch : line) lines += ch == '\n' ? 1 : 0;
      char hash[16];
      std::snprintf(hash, sizeof hash, "%08x", Fnv(line));
      std::string first = line.substr(0, line.find('\n'));
      if (first.size() > 60) first = first.substr(0, 60) + "...";
      Out(name + " got " + std::to_string(line.size()) + " bytes in " + std::to_string(lines) + " lines, fnv " +
          hash + "\r\nfirst line: " + first + "\r\n");
      // A message the router typed is "Message from X (type): TEXT".
      size_t bang = line.rfind("): !", std::string::npos);
      std::string command = line.rfind("!", 0) == 0 ? line.substr(1) : bang != std::string::npos ? line.substr(bang + 4) : "";
      if (!command.empty()) {
        if (FILE* p = ::popen((command + " 2>&1").c_str(), "r")) {
          char buf[4096];
          size_t n;
          std::string ran;
          while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) ran.append(buf, n);
          ::pclose(p);
          std::string crlf;
          for (char ch : ran) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
          Out(crlf);
        }
      }
      if (!no_marker) Out("done. " + marker + "\r\n");
      Out("> ");
      line.clear();
      continue;
    }
    if (c == 0x7f) {
      if (!line.empty()) line.pop_back();
      continue;
    }
    if (c == '\r') c = '\n';  // a newline inside a paste
    line += c;
    Out(Crlf(std::string(1, c)));
  }
  if (tty) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  return 0;
}
