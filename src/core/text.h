// Text from outside, made short enough to pass on (a notice to a model, a
// status line) without cutting a character in two.
#pragma once

#include <cstddef>
#include <streambuf>
#include <string>
#include <vector>
#include <string_view>

namespace mates {

// `s` cut to at most `max` bytes, never inside a UTF-8 sequence, with "…"
// after it when cut.
std::string CutUtf8(std::string_view s, size_t max);
// `s` padded with spaces to `width` columns (UTF-8 characters counted, not
// bytes), or with one space if it is that wide already: a table's cell.
std::string PadColumns(const std::string& s, size_t width);
// " (did you mean 'status'?)" for a near miss of `typed` among `names`
// (edit distance within a third of its length, at least 2); "" if none.
std::string DidYouMean(const std::vector<std::string>& names, const std::string& typed);
// The first `most` of `items` with `sep` between them, and "…" after when
// there were more: a list in a line ("a.txt, b.txt").
std::string JoinWords(const std::vector<std::string>& items, std::string_view sep = ", ",
                      size_t most = static_cast<size_t>(-1));

// Text from outside as a terminal may show it: control characters (C0 but
// the newline, DEL, C1 in UTF-8), which could move the cursor or rewrite
// what the person sees, each become '?'; at most `max` bytes, "…" after.
std::string ForTerminal(std::string_view text, size_t max = static_cast<size_t>(-1));
// The same rule for a whole output stream (DESIGN §26: every
// person-facing output strips control characters): installed over
// std::cout and std::cerr by main, so that no command prints a stored
// task subject, message, member name or Claude Code file raw. Newlines
// and tabs pass, and so do colour sequences (ESC [ digits and ';' m),
// which change no more than a colour; every other control character, or
// ESC sequence, becomes '?'.
class TerminalSafeBuf : public std::streambuf {
 public:
  explicit TerminalSafeBuf(std::streambuf* to) : to_(to) {}
  ~TerminalSafeBuf() override {
    Flush();  // a sequence never finished: '?'s
    sync();
  }
  TerminalSafeBuf(const TerminalSafeBuf&) = delete;
  TerminalSafeBuf& operator=(const TerminalSafeBuf&) = delete;

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  void Put(unsigned char c);
  void Flush();  // a pending sequence that never finished, as '?'s

  std::streambuf* to_;
  std::string pending_;  // an ESC sequence or a C2 lead byte, not yet judged
};

// `bytes` in base64, no padding: the standard alphabet, or with `url_safe`
// RFC 4648's URL-safe one ('-' and '_').
std::string Base64Unpadded(std::string_view bytes, bool url_safe);

// `s` with every byte but RFC 3986's unreserved ones (letters, digits,
// '-', '.', '_', '~') and those in `keep` as %XX.
std::string PercentEncode(std::string_view s, std::string_view keep = "");

}  // namespace mates
