// What the report's renderings (markdown.cc, html.cc, json.cc) say alike:
// times, sums and counts in words.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "report/report.h"

namespace mates::report {

// A time of the record as an offset from its start: "+0.04s", "+2m05s".
std::string Offset(const Report& r, double at);
// A length of time: "0.12s", "3.4s", "2m05s", "1h02m".
std::string Duration(double seconds);
// "10.2k tokens, $0.0500" (", cost unknown" when a model has no price).
std::string Spent(const llm::Usage& u, std::optional<double> cost_usd);
// The failures by class, every class present (0 for none).
std::map<FailureClass, int> FailuresByClass(const Report& r);
// "3 of 5 completed, 1 in progress, 1 pending" (deleted ones said apart).
std::string TaskCounts(const Report& r);
// "run +0.00s from 1a2b3c4d (main); made +0.02s from 1a2b3c4d (main)",
// "" without sessions.
std::string SessionsSaid(const Report& r);
// The task's subject by id ("" unknown).
std::string SubjectOf(const Report& r, int64_t task);

}  // namespace mates::report
