#include "core/text.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace mates {

std::string CutUtf8(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return std::string(s.substr(0, end)) + "…";
}

std::string ForTerminal(std::string_view text, size_t max) {
  std::string out;
  size_t i = 0;
  for (; i < text.size() && out.size() < max; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      out += '?';
      ++i;
    } else if ((c < 0x20 && c != '\n') || c == 0x7F) {
      out += '?';
    } else {
      out += static_cast<char>(c);
    }
  }
  if (i == text.size()) return out;
  // Cut: no character left in two, whatever byte the cut fell on.
  if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) {
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty()) out.pop_back();  // the lead byte of the character cut
  }
  return out + "…";
}

void TerminalSafeBuf::Flush() {
  for (size_t i = 0; i < pending_.size(); ++i) to_->sputc('?');
  pending_.clear();
}

void TerminalSafeBuf::Put(unsigned char c) {
  if (!pending_.empty() && pending_[0] == '\xC2') {
    pending_.clear();
    if (c >= 0x80 && c <= 0x9F) {  // a C1 control in UTF-8
      to_->sputc('?');
      return;
    }
    to_->sputc('\xC2');
  } else if (!pending_.empty()) {  // ESC …
    if (pending_.size() == 1) {
      if (c == '[') {
        pending_ += static_cast<char>(c);
        return;
      }
      Flush();
    } else if ((c >= '0' && c <= '9') || c == ';') {
      if (pending_.size() < 32) {
        pending_ += static_cast<char>(c);
        return;
      }
      Flush();
    } else if (c == 'm') {  // a colour: passed whole
      to_->sputn(pending_.data(), static_cast<std::streamsize>(pending_.size()));
      to_->sputc('m');
      pending_.clear();
      return;
    } else {
      Flush();
    }
  }
  if (c == 0x1B || c == 0xC2) {
    pending_ = std::string(1, static_cast<char>(c));
  } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
    to_->sputc('?');
  } else {
    to_->sputc(static_cast<char>(c));
  }
}

TerminalSafeBuf::int_type TerminalSafeBuf::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  Put(static_cast<unsigned char>(traits_type::to_char_type(c)));
  return c;
}

std::streamsize TerminalSafeBuf::xsputn(const char* s, std::streamsize n) {
  for (std::streamsize i = 0; i < n; ++i) Put(static_cast<unsigned char>(s[i]));
  return n;
}

int TerminalSafeBuf::sync() {
  // A pending sequence stays pending (a flush between ESC and its '[', or
  // between 0xC2 and a C1 byte, must not let the rest through raw).
  return to_->pubsync();
}

std::string Base64Unpadded(std::string_view bytes, bool url_safe) {
  static const char kStandard[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static const char kUrlSafe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const char* alphabet = url_safe ? kUrlSafe : kStandard;
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += alphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += alphabet[(acc << (6 - bits)) & 63];
  return out;
}

std::string PercentEncode(std::string_view s, std::string_view keep) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    const bool unreserved = std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string PadColumns(const std::string& s, size_t width) {
  size_t cols = 0;
  for (unsigned char c : s) cols += (c & 0xC0) != 0x80;
  return cols >= width ? s + " " : s + std::string(width - cols, ' ');
}

namespace {

// Edits between `a` and `b` (Levenshtein).
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string JoinWords(const std::vector<std::string>& items, std::string_view sep, size_t most) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < most; ++i) {
    if (i) out += sep;
    out += items[i];
  }
  if (items.size() > most) out += std::string(sep) + "…";
  return out;
}

std::string DidYouMean(const std::vector<std::string>& names, const std::string& typed) {
  std::string best;
  size_t best_d = std::max<size_t>(2, typed.size() / 3) + 1;
  for (const auto& name : names) {
    if (name.size() > 256 || typed.size() > 256) continue;
    size_t d = Distance(typed, name);
    if (d < best_d) {
      best_d = d;
      best = name;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace mates
