#include "cli/live_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/text.h"

namespace mates::cli {
namespace {

const char* AnsiFor(const std::string& name) {
  if (name == "cyan") return "\033[36m";
  if (name == "yellow") return "\033[33m";
  if (name == "magenta") return "\033[35m";
  if (name == "green") return "\033[32m";
  if (name == "blue") return "\033[34m";
  if (name == "red") return "\033[31m";
  if (name == "dim") return "\033[2m";
  return "";
}

std::string FirstLine(const std::string& s, size_t max) {
  std::string line = s.substr(0, s.find('\n'));
  if (line.size() > max) line = line.substr(0, max) + "…";
  size_t lines = std::count(s.begin(), s.end(), '\n');
  if (lines > 1 || (lines == 1 && s.back() != '\n')) line += " (+" + std::to_string(lines) + " lines)";
  return line;
}

void Out(FILE* f, const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), f);
  std::fflush(f);
}

}  // namespace

// `s` without its ANSI colour sequences (ESC [ … m), for the --log file.
std::string StripAnsi(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\033' && i + 1 < s.size() && s[i + 1] == '[') {
      size_t m = s.find('m', i + 2);
      if (m != std::string::npos) {
        i = m;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

bool WantColor() {
  const char* no = std::getenv("NO_COLOR");
  return ::isatty(STDOUT_FILENO) == 1 && (no == nullptr || *no == '\0');
}

LiveOutput::~LiveOutput() {
  if (tee_ != nullptr) std::fclose(tee_);
}

Status LiveOutput::TeeTo(const fs::path& file) {
  std::lock_guard<std::mutex> lock(mu_);
  FILE* f = std::fopen(file.c_str(), "ae");
  if (f == nullptr) return Status::FromErrno("open the --log file " + file.string(), errno);
  if (tee_ != nullptr) std::fclose(tee_);
  tee_ = f;
  return Status::Ok();
}

void LiveOutput::PutLocked(FILE* f, const std::string& unsafe) {
  // What agents write (a model's text, a tool's output, a host's stored
  // words) goes to the terminal as TerminalSafeBuf lets std::cout's out:
  // colours pass, any other control sequence becomes '?' (DESIGN §26).
  // This path writes to the FILE*, past the stream main guards.
  std::stringbuf kept;
  {
    TerminalSafeBuf safe(&kept);
    safe.sputn(unsafe.data(), static_cast<std::streamsize>(unsafe.size()));
  }
  const std::string s = kept.str();
  Out(f, s);
  ++written_;
  if (tee_ != nullptr) {
    std::string plain = StripAnsi(s);
    std::fwrite(plain.data(), 1, plain.size(), tee_);
    std::fflush(tee_);
  }
}

void LiveOutput::SetColor(const std::string& agent, const std::string& color_name) {
  std::lock_guard<std::mutex> lock(mu_);
  colors_[agent] = color_name;
}

void LiveOutput::SetMulti(bool multi) {
  std::lock_guard<std::mutex> lock(mu_);
  multi_ = multi;
}

std::string LiveOutput::Paint(const std::string& agent, const std::string& text) const {
  if (!color_) return text;
  auto it = colors_.find(agent);
  const char* code = it == colors_.end() ? "" : AnsiFor(it->second);
  if (*code == '\0') return text;
  return std::string(code) + text + "\033[0m";
}

std::string LiveOutput::Prefix(const std::string& agent) const {
  if (!multi_ || agent.empty()) return "";
  return Paint(agent, "[" + agent + "] ");
}

void LiveOutput::Line(const std::string& agent, const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  PutLocked(stderr, Prefix(agent) + text + "\n");
}

void LiveOutput::OnText(const std::string& agent, std::string_view delta) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!multi_) {
    PutLocked(stdout, std::string(delta));
    if (!delta.empty()) mid_line_[agent] = delta.back() != '\n';
    return;
  }
  // Several agents: whole lines only, each with its name.
  std::string& buf = pending_[agent];
  buf.append(delta);
  size_t nl;
  while ((nl = buf.find('\n')) != std::string::npos) {
    PutLocked(stdout, Prefix(agent) + buf.substr(0, nl) + "\n");
    buf.erase(0, nl + 1);
  }
}

void LiveOutput::FlushLocked(const std::string& agent) {
  auto it = pending_.find(agent);
  if (it != pending_.end() && !it->second.empty()) {
    PutLocked(stdout, Prefix(agent) + it->second + "\n");
    it->second.clear();
  }
  if (mid_line_[agent]) {
    PutLocked(stdout, "\n");
    mid_line_[agent] = false;
  }
}

void LiveOutput::OnTextEnd(const std::string& agent) {
  std::lock_guard<std::mutex> lock(mu_);
  FlushLocked(agent);
}

void LiveOutput::OnToolCall(const std::string& agent, const llm::ContentBlock& call) {
  ShowCall(agent, DescribeCall(call));
}

void LiveOutput::ShowCall(const std::string& agent, const std::string& described) {
  std::lock_guard<std::mutex> lock(mu_);
  FlushLocked(agent);
  PutLocked(stderr, Prefix(agent) + Paint(agent, "⏺ " + described) + "\n");
  call_at_[agent] = written_;
}

void LiveOutput::OnToolResult(const std::string& agent, const llm::ContentBlock& call,
                              const tools::ToolResult& result) {
  ShowResult(agent, DescribeCall(call), result.content, result.is_error);
}

void LiveOutput::ShowResult(const std::string& agent, const std::string& described, const std::string& result,
                            bool error) {
  std::lock_guard<std::mutex> lock(mu_);
  // Other agents wrote since this call was shown: show it again, so the
  // result sits under its call.
  auto at = call_at_.find(agent);
  if (multi_ && at != call_at_.end() && at->second != written_) {
    PutLocked(stderr, Prefix(agent) + Paint(agent, "⏺ " + described + " (result)") + "\n");
  }
  call_at_.erase(agent);
  std::string line = "  ⎿ " + std::string(error ? "✗ " : "") + FirstLine(result, 110);
  if (color_ && error) line = std::string(AnsiFor("red")) + line + "\033[0m";
  else if (color_) line = std::string(AnsiFor("dim")) + line + "\033[0m";
  PutLocked(stderr, Prefix(agent) + line + "\n");
}

void LiveOutput::OnMessages(const std::string& agent, const std::vector<Message>& delivered) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& m : delivered) {
    std::string about = m.summary.empty() ? FirstLine(m.content, 80) : m.summary;
    std::string type = m.type == MessageType::kMessage ? "" : " (" + std::string(MessageTypeName(m.type)) + ")";
    PutLocked(stderr, Prefix(agent) + Paint(agent, "✉ from " + m.sender + type + ": " + about) + "\n");
  }
}

void LiveOutput::OnRetry(const std::string& agent, int attempt, const Status& why, double delay_s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", delay_s);
  Line(agent, "↻ retry " + std::to_string(attempt) + " in " + buf + " s: " + why.message());
}

void LiveOutput::OnCompact(const std::string& agent, int64_t before, int64_t after,
                           const std::string& transcript) {
  Line(agent, "⧉ context compacted: ~" + std::to_string(before) + " → ~" + std::to_string(after) +
                  " tokens (full transcript: " + transcript + ")");
}

void LiveOutput::OnNotice(const std::string& agent, const std::string& text) {
  Line(agent, "! " + text);
}

}  // namespace mates::cli
