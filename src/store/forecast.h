// Conflict forecasts (DESIGN §30): what the host's forecaster
// (git/forecast.h) predicts will not merge, while the work is still in
// progress — two teammates' worktrees that change the same lines, or one
// that changes what has landed on the target since it started. The host
// keeps them in `.teams/<team>/forecast.json` beside its host.json:
//
//   {"forecasts": [{"members": ["w1", "w2"], "tasks": [3, 4],
//                   "files": ["src/a.cc"], "since": 1763884800.1}]}
//
// (one member and "target": true for a conflict with the target). Read
// with the live host (store/host_info.h): status, its JSON and the page
// show them as attention `conflict_forecast`; gone when resolved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "store/workspace.h"

namespace mates {

struct ConflictForecast {
  std::vector<std::string> members;  // two; one when with the target
  std::vector<int64_t> tasks;        // each member's task in progress (0: none)
  std::vector<std::string> files;
  bool with_target = false;
  double since = 0;
};
// What forecast.json may hold: the rest is not read.
inline constexpr size_t kMaxForecasts = 256;
inline constexpr size_t kMaxForecastFiles = 64;
inline constexpr size_t kMaxForecastBytes = size_t{4} << 20;  // the document; past it, none

fs::path ForecastPath(const Workspace& ws, std::string_view team);
Json ForecastsToJson(const std::vector<ConflictForecast>& f);
// Bad entries are skipped; a file that is not JSON is none.
std::vector<ConflictForecast> ForecastsFromJson(const Json& j);
// forecast.json names the process that wrote it ("pid", "start_time"):
// a forecast is its writer's (a lead's host, or a cluster's router), and
// is none once that process is gone.
Status WriteForecasts(const Workspace& ws, std::string_view team, const std::vector<ConflictForecast>& f);
// What the file holds, whoever wrote it (a report reads a stopped team's).
std::vector<ConflictForecast> ReadForecasts(const Workspace& ws, std::string_view team);
// The same while its writer lives; none once it is gone.
std::vector<ConflictForecast> ReadLiveForecasts(const Workspace& ws, std::string_view team);

}  // namespace mates
