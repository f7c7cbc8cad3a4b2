#include "replay/normalise.h"

#include <algorithm>
#include <cctype>

namespace mates::replay {
namespace {

bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool Digit(char c) { return c >= '0' && c <= '9'; }
bool Hex(char c) { return Digit(c) || (c >= 'a' && c <= 'f'); }

// Digits at `at` for `n` characters.
bool DigitsAt(std::string_view t, size_t at, size_t n) {
  if (at + n > t.size()) return false;
  for (size_t i = at; i < at + n; ++i) {
    if (!Digit(t[i])) return false;
  }
  return true;
}

// The length of an ISO-8601 time at `at` (2026-12-06T13:26:25.123Z), else 0.
size_t IsoTimeAt(std::string_view t, size_t at) {
  if (!DigitsAt(t, at, 4) || at + 19 > t.size() || t[at + 4] != '-' || !DigitsAt(t, at + 5, 2) ||
      t[at + 7] != '-' || !DigitsAt(t, at + 8, 2) || (t[at + 10] != 'T' && t[at + 10] != ' ') ||
      !DigitsAt(t, at + 11, 2) || t[at + 13] != ':' || !DigitsAt(t, at + 14, 2) || t[at + 16] != ':' ||
      !DigitsAt(t, at + 17, 2)) {
    return 0;
  }
  size_t end = at + 19;
  if (end < t.size() && t[end] == '.') {
    ++end;
    while (end < t.size() && Digit(t[end])) ++end;
  }
  if (end < t.size() && t[end] == 'Z') ++end;
  return end - at;
}

// The length of the alphanumeric run at `at`.
size_t RunAt(std::string_view t, size_t at) {
  size_t end = at;
  while (end < t.size() && Alnum(t[end])) ++end;
  return end - at;
}

std::string MaskRuns(std::string_view t) {
  std::string out;
  out.reserve(t.size());
  size_t i = 0;
  while (i < t.size()) {
    if (!Alnum(t[i]) || (i > 0 && Alnum(t[i - 1]))) {
      out += t[i++];
      continue;
    }
    if (size_t n = IsoTimeAt(t, i); n > 0) {
      out += "<time>";
      i += n;
      continue;
    }
    const size_t n = RunAt(t, i);
    const std::string_view run = t.substr(i, n);
    if (n == 15 && DigitsAt(run, 0, 8) && run[8] == 'T' && DigitsAt(run, 9, 6)) {
      out += "<stamp>";
    } else if (n >= 7 && n <= 40 && std::all_of(run.begin(), run.end(), Hex) &&
               std::any_of(run.begin(), run.end(), Digit) &&
               (n >= 10 || std::any_of(run.begin(), run.end(), [](char c) { return !Digit(c); }))) {
      // Ten digits and more are a commit that happens to have no letter
      // (one in a hundred short ones), or a clock's seconds: both differ.
      out += "<hex>";
    } else {
      out += run;
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string Masked(std::string_view text, const std::vector<std::string>& roots) {
  std::string t(text);
  std::vector<std::string> sorted = roots;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& root : sorted) {
    if (root.size() < 2) continue;
    for (size_t at = 0; (at = t.find(root, at)) != std::string::npos;) {
      t.replace(at, root.size(), "<workspace>");
      at += 11;
    }
  }
  return MaskRuns(t);
}

std::vector<std::string> IdsIn(std::string_view t) {
  std::vector<std::string> ids;
  for (size_t i = 0; i + 18 <= t.size(); ++i) {
    if ((t[i] != 'm' && t[i] != 'r') || t[i + 1] != '-' || (i > 0 && Alnum(t[i - 1]))) continue;
    if (RunAt(t, i + 2) != 16) continue;
    std::string_view hex = t.substr(i + 2, 16);
    if (!std::all_of(hex.begin(), hex.end(), Hex)) continue;
    ids.emplace_back(t.substr(i, 18));
    i += 17;
  }
  return ids;
}

bool IdMap::Learn(std::string_view recorded, std::string_view replayed, const std::vector<std::string>& roots) {
  if (Masked(recorded, roots) != Masked(replayed, roots)) return false;
  const auto from = IdsIn(recorded);
  const auto to = IdsIn(replayed);
  if (from.size() != to.size()) return true;  // the same words; ids of other shapes
  for (size_t i = 0; i < from.size(); ++i) map_.emplace(from[i], to[i]);
  return true;
}

std::string IdMap::Apply(const std::string& text) const {
  if (map_.empty()) return text;
  std::string out;
  out.reserve(text.size());
  size_t at = 0;
  for (const auto& id : IdsIn(text)) {
    size_t pos = text.find(id, at);
    out.append(text, at, pos - at);
    auto m = map_.find(id);
    out += m != map_.end() ? m->second : id;
    at = pos + id.size();
  }
  out.append(text, at, std::string::npos);
  return out;
}

}  // namespace mates::replay
