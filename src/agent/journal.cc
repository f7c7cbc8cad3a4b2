#include "agent/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/log.h"

namespace mates::agent {

Result<Journal> Journal::Open(const fs::path& path) {
  MATES_RETURN_IF_ERROR(EnsureDir(path.parent_path()));
  ScopedFd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::FromErrno("open journal " + path.string(), errno);
  // A process killed mid-append leaves a line without its newline: cut it,
  // or the next line would be glued to it.
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) {
    auto data = ReadFile(path);
    if (data.ok() && data->back() != '\n') {
      size_t keep = data->rfind('\n');
      keep = keep == std::string::npos ? 0 : keep + 1;
      LogWarning("journal " + path.string() + ": dropping a torn last line");
      if (::ftruncate(fd.get(), static_cast<off_t>(keep)) != 0) {
        return Status::FromErrno("truncate " + path.string(), errno);
      }
    }
  }
  return Journal(path, std::move(fd));
}

Status Journal::Append(const std::string& line) {
  return WriteAll(fd_.get(), line + "\n", path_.c_str());
}

Status Journal::AppendMessage(const llm::ChatMessage& m, const std::vector<std::string>& delivered) {
  Json line = {{"kind", "message"}, {"ts", WallSeconds()}, {"message", llm::MessageToJson(m)}};
  if (!delivered.empty()) line["delivered"] = delivered;
  return Append(DumpJson(line));
}

Status Journal::AppendCompaction(const std::vector<llm::ChatMessage>& messages,
                                 const std::string& transcript_path) {
  Json arr = Json::array();
  for (const auto& m : messages) arr.push_back(llm::MessageToJson(m));
  return Append(DumpJson(Json{{"kind", "compact"}, {"ts", WallSeconds()},
                              {"transcript", transcript_path}, {"messages", arr}}));
}

Status Journal::AppendDelivered(const std::vector<std::string>& ids) {
  return Append(DumpJson(Json{{"kind", "delivered"}, {"ids", ids}}));
}

Status Journal::AppendUsage(const llm::Usage& u) {
  return Append(DumpJson(Json{{"kind", "usage"}, {"usage", llm::UsageToJson(u)}}));
}

Result<JournalState> Journal::Load(const fs::path& path) {
  JournalState st;
  auto data = ReadFile(path);
  if (!data.ok()) {
    if (data.status().code() == StatusCode::kNotFound) return st;
    return data.status();
  }
  size_t start = 0, line_no = 0;
  while (start < data->size()) {
    size_t end = data->find('\n', start);
    if (end == std::string::npos) break;  // torn tail
    ++line_no;
    std::string_view line(data->data() + start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    auto j = ParseJson(line);
    if (!j.ok() || !j->is_object()) {
      LogWarning("journal " + path.string() + ":" + std::to_string(line_no) + ": skipping a bad line");
      continue;
    }
    std::string kind = j->value("kind", "");
    if (kind == "message") {
      auto m = llm::MessageFromJson((*j)["message"]);
      if (!m.ok()) continue;
      if (!st.messages.empty() && st.messages.back().role == m->role) {
        for (auto& b : m->content) st.messages.back().content.push_back(std::move(b));
      } else {
        st.messages.push_back(std::move(*m));
      }
      if (j->contains("delivered")) {
        for (const auto& id : (*j)["delivered"]) {
          if (id.is_string()) st.delivered.insert(id.get<std::string>());
        }
      }
    } else if (kind == "compact") {
      std::vector<llm::ChatMessage> msgs;
      for (const auto& jm : (*j)["messages"]) {
        auto m = llm::MessageFromJson(jm);
        if (m.ok()) msgs.push_back(std::move(*m));
      }
      st.messages = std::move(msgs);
      ++st.compactions;
    } else if (kind == "delivered") {
      for (const auto& id : (*j)["ids"]) {
        if (id.is_string()) st.delivered.insert(id.get<std::string>());
      }
    } else if (kind == "usage") {
      st.usage += llm::UsageFromJson((*j)["usage"]);
      ++st.calls;
    }
  }
  return st;
}

}  // namespace mates::agent
