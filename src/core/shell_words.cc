#include "core/shell_words.h"

namespace mates {

Result<std::vector<std::string>> SplitShellWords(std::string_view s) {
  std::vector<std::string> words;
  std::string w;
  bool in_word = false;  // a word has begun ('' begins an empty one)
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(w));
      w.clear();
      in_word = false;
    } else if (c == '\'') {
      size_t end = s.find('\'', i + 1);
      if (end == std::string_view::npos) {
        return Status::InvalidArgument("unterminated ' (opened at character " + std::to_string(i + 1) + ")");
      }
      w.append(s.substr(i + 1, end - i - 1));
      in_word = true;
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (;; ++j) {
        if (j >= s.size()) {
          return Status::InvalidArgument("unterminated \" (opened at character " + std::to_string(i + 1) + ")");
        }
        if (s[j] == '"') break;
        if (s[j] == '\\' && j + 1 < s.size()) {
          char n = s[j + 1];
          if (n == '"' || n == '\\' || n == '$' || n == '`') {
            w += n;
            ++j;
            continue;
          }
          if (n == '\n') {
            ++j;
            continue;
          }
        }
        w += s[j];
      }
      in_word = true;
      i = j;
    } else if (c == '\\') {
      if (i + 1 >= s.size()) return Status::InvalidArgument("a trailing backslash escapes nothing");
      if (s[i + 1] != '\n') {
        w += s[i + 1];
        in_word = true;
      }
      ++i;
    } else {
      w += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(w));
  return words;
}

}  // namespace mates
