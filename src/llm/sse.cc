#include "llm/sse.h"

#include "core/limits.h"

namespace mates::llm {

SseParser::SseParser(Handler handler, size_t max_line)
    : handler_(std::move(handler)), max_line_(max_line > 0 ? max_line : kMaxSseLineBytes) {}

void SseParser::Feed(std::string_view bytes) {
  for (char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // "\r\n" is one line break
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      if (skipping_) {
        skipping_ = false;  // the overlong line ends here, unseen
      } else {
        Line(line_);
      }
      line_.clear();
    } else if (!skipping_) {
      line_ += c;
      if (line_.size() > max_line_) {
        overflowed_ = true;
        skipping_ = true;
        line_.clear();
        line_.shrink_to_fit();
      }
    }
  }
}

bool SseParser::Finish() {
  bool leftover = !line_.empty() || has_data_ || !pending_.event.empty();
  line_.clear();
  pending_ = SseEvent{};
  has_data_ = false;
  return leftover;
}

void SseParser::Line(std::string_view line) {
  if (line.empty()) {
    if (has_data_ || !pending_.event.empty()) handler_(pending_);
    pending_.event.clear();
    pending_.data.clear();
    has_data_ = false;
    return;
  }
  if (line[0] == ':') return;  // comment
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) pending_.data += '\n';
    pending_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    pending_.event = std::string(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) pending_.id = std::string(value);
  } else if (field == "retry") {
    // Digits only, else ignored (the spec); a bound keeps it a duration.
    if (!value.empty() && value.size() <= 9 && value.find_first_not_of("0123456789") == std::string_view::npos) {
      retry_ms_ = std::stol(std::string(value));
    }
  }
  // Unknown fields are ignored.
}

}  // namespace mates::llm
