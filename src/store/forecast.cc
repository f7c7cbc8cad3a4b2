#include "store/forecast.h"

#include <unistd.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/names.h"
#include "core/process_tree.h"

namespace mates {

fs::path ForecastPath(const Workspace& ws, std::string_view team) { return ws.TeamDir(team) / "forecast.json"; }

Json ForecastsToJson(const std::vector<ConflictForecast>& f) {
  Json list = Json::array();
  for (const auto& c : f) {
    Json one = {{"members", c.members}, {"tasks", c.tasks}, {"files", c.files}, {"since", c.since}};
    if (c.with_target) one["target"] = true;
    list.push_back(std::move(one));
  }
  return {{"forecasts", std::move(list)}};
}

std::vector<ConflictForecast> ForecastsFromJson(const Json& j) {
  std::vector<ConflictForecast> out;
  if (!j.is_object()) return out;
  auto list = j.find("forecasts");
  if (list == j.end() || !list->is_array()) return out;
  for (const auto& e : *list) {
    if (out.size() == kMaxForecasts) break;
    if (!e.is_object()) continue;
    ConflictForecast c;
    bool good = true;
    for (const auto& m : e.value("members", Json::array())) {
      good = good && m.is_string() && ValidateName("member name", m.get<std::string>()).ok();
      if (good) c.members.push_back(m.get<std::string>());
    }
    for (const auto& t : e.value("tasks", Json::array())) {
      if (t.is_number_integer()) c.tasks.push_back(t.get<int64_t>());
    }
    for (const auto& f : e.value("files", Json::array())) {
      if (f.is_string() && c.files.size() < kMaxForecastFiles) c.files.push_back(f.get<std::string>());
    }
    auto target = e.find("target");
    c.with_target = target != e.end() && target->is_boolean() && target->get<bool>();
    auto since = e.find("since");
    c.since = since != e.end() && since->is_number() ? since->get<double>() : 0;
    if (!good || c.members.empty() || c.members.size() > 2) continue;
    out.push_back(std::move(c));
  }
  return out;
}

Status WriteForecasts(const Workspace& ws, std::string_view team, const std::vector<ConflictForecast>& f) {
  Json doc = ForecastsToJson(f);
  doc["pid"] = static_cast<int64_t>(::getpid());
  doc["start_time"] = ProcessStartTime(::getpid());
  return WriteFileAtomic(ForecastPath(ws, team), DumpJson(doc) + "\n");
}

namespace {

Json ForecastDocument(const Workspace& ws, std::string_view team) {
  auto text = ReadFilePrefix(ForecastPath(ws, team), kMaxForecastBytes + 1);
  if (!text.ok() || text->size() > kMaxForecastBytes) return Json::object();
  auto j = ParseJson(*text);
  return j.ok() && j->is_object() ? std::move(*j) : Json::object();
}

}  // namespace

std::vector<ConflictForecast> ReadForecasts(const Workspace& ws, std::string_view team) {
  return ForecastsFromJson(ForecastDocument(ws, team));
}

std::vector<ConflictForecast> ReadLiveForecasts(const Workspace& ws, std::string_view team) {
  // Read without adding (a Json's [] adds a key: the first reference
  // would not outlive the second).
  const Json doc = ForecastDocument(ws, team);
  const auto pid = doc.find("pid");
  const auto start = doc.find("start_time");
  if (pid == doc.end() || start == doc.end() || !pid->is_number_integer() || !start->is_number_unsigned() ||
      pid->get<int64_t>() <= 0 || pid->get<int64_t>() > std::numeric_limits<pid_t>::max() ||
      !ProcessLives(static_cast<pid_t>(pid->get<int64_t>()), start->get<uint64_t>())) {
    return {};
  }
  return ForecastsFromJson(doc);
}

}  // namespace mates
