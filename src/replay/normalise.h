// What differs between two runs of one session without anything having
// diverged (DESIGN §31): the ids a run makes at random (messages m-…,
// requests r-…), commits, archive stamps, clock times, and where the
// workspace is. A replay compares tool results with these masked, and
// learns which of its ids stands for which recorded one, so that a
// recorded reply that names a request ("approve r-5e…") names the replay's.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace mates::replay {

// `text` with each of `roots` (longest first) as <workspace>, hex runs of
// 7 to 40 characters that hold a digit and a letter (ids, commits), or of
// 10 to 40 digits (a commit without a letter, epoch seconds), as <hex>, archive stamps (20261206T132625) as <stamp>, and ISO-8601 times as
// <time>.
std::string Masked(std::string_view text, const std::vector<std::string>& roots);

// Recorded ids → the replay's, learned from texts that read the same.
class IdMap {
 public:
  // If `recorded` and `replayed` read the same masked (`roots`), learns
  // their ids pairwise, in order (an id already mapped keeps its first
  // pair) and returns true.
  bool Learn(std::string_view recorded, std::string_view replayed, const std::vector<std::string>& roots);
  // `text` with every recorded id it knows replaced by the replay's.
  std::string Apply(const std::string& text) const;
  size_t size() const { return map_.size(); }

 private:
  std::map<std::string, std::string> map_;
};

// The ids (m-…, r-… with 16 hex digits) of `text`, in order.
std::vector<std::string> IdsIn(std::string_view text);

}  // namespace mates::replay
