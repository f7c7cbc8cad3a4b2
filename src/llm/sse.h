// SseParser: Server-Sent Events (WHATWG) fed in arbitrary byte chunks.
//
// Written by hand: it is forty lines, and libcurl hands us raw bytes. Lines
// end in "\n", "\r\n" or "\r" (a "\r" at the end of a chunk waits to see
// whether "\n" follows); "data:" lines accumulate, joined with "\n"; a blank
// line dispatches the event; lines starting with ":" are comments. Bytes are
// never split inside a line, so UTF-8 sequences cut between chunks arrive
// whole.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace mates::llm {

struct SseEvent {
  std::string event;  // "" when the stream named none ("message")
  std::string data;
  std::string id;
};

class SseParser {
 public:
  using Handler = std::function<void(const SseEvent&)>;
  // Lines longer than `max_line` bytes (default kMaxSseLineBytes) are
  // dropped and the stream is marked overflowed: nothing a server sends
  // grows a buffer without bound.
  explicit SseParser(Handler handler, size_t max_line = 0);

  void Feed(std::string_view bytes);
  // A line was longer than the bound (and dropped).
  bool overflowed() const { return overflowed_; }
  // End of stream: a final event without its blank line is NOT dispatched
  // (the spec drops it); returns whether bytes were left over.
  bool Finish();
  // The stream's last event id (set by every `id:` field, dispatched or
  // not, as the spec's "last event ID buffer") and the reconnection time a
  // `retry:` field of digits set (-1: none) — what a client resuming the
  // stream needs.
  const std::string& last_id() const { return pending_.id; }
  long retry_ms() const { return retry_ms_; }

 private:
  void Line(std::string_view line);

  Handler handler_;
  size_t max_line_;
  bool overflowed_ = false;
  bool skipping_ = false;  // inside an overlong line
  std::string line_;
  bool after_cr_ = false;  // the last byte seen was '\r'
  SseEvent pending_;
  bool has_data_ = false;
  long retry_ms_ = -1;
};

}  // namespace mates::llm
