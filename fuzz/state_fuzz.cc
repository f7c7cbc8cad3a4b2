// libFuzzer target: every line and file of team state mates reads back:
// task files, rosters, inbox/log lines, protocol requests, journals. What
// parses is dumped again (the state files' pretty form included).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/journal.h"
#include "core/json.h"
#include "store/message.h"
#include "store/requests.h"
#include "store/roster.h"
#include "store/task.h"

using namespace mates;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: {
      auto j = ParseJson(text);
      if (!j.ok()) break;
      auto t = TaskFromJson(*j);
      if (t.ok()) (void)DumpJsonPretty(TaskToJson(*t));
      break;
    }
    case 1: {
      auto j = ParseJson(text);
      if (!j.ok()) break;
      auto c = TeamConfigFromJson(*j);
      if (c.ok()) (void)DumpJsonPretty(TeamConfigToJson(*c));
      break;
    }
    case 2: {
      auto m = ParseMessageLine(text);
      if (m.ok()) (void)MessageToLine(*m);
      break;
    }
    case 3: {
      auto j = ParseJson(text);
      if (!j.ok()) break;
      auto r = ProtocolRequestFromJson(*j);
      if (r.ok()) (void)DumpJsonPretty(ProtocolRequestToJson(*r));
      break;
    }
    default: {
      auto st = agent::Journal::ReplayText(text, "fuzz.jsonl");
      for (const auto& m : st.messages) (void)DumpJson(llm::MessageToJson(m));
      break;
    }
  }
  return 0;
}
