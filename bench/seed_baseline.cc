#include "seed_baseline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace mates::seed {

SeedMailbox::SeedMailbox(fs::path dir, std::string member)
    : inbox_(dir / (member + "_inbox.jsonl")), lock_(dir / (member + "_inbox.lock")) {}

bool SeedMailbox::LockFile() {
  for (int i = 0; i < 50; ++i) {
    int fd = ::open(lock_.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd >= 0) {
      ::close(fd);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void SeedMailbox::UnlockFile() { ::unlink(lock_.c_str()); }

void SeedMailbox::Append(const std::string& json_line) {
  LockFile();  // the seed writes even when this failed
  {
    std::ofstream out(inbox_, std::ios::app);
    out << json_line;
  }
  UnlockFile();
}

std::vector<std::string> SeedMailbox::Drain() {
  LockFile();
  std::vector<std::string> lines;
  {
    std::ifstream in(inbox_);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) lines.push_back(line);
    }
  }
  { std::ofstream trunc(inbox_, std::ios::trunc); }
  UnlockFile();
  return lines;
}

void SeedCreateTasks(const fs::path& tasks_dir, int n) {
  fs::create_directories(tasks_dir);
  for (int i = 1; i <= n; ++i) {
    nlohmann::json t = {{"id", i},          {"subject", "task " + std::to_string(i)},
                        {"status", "pending"}, {"owner", ""},
                        {"blockedBy", nlohmann::json::array()}};
    std::ofstream(tasks_dir / ("task_" + std::to_string(i) + ".json")) << t.dump();
  }
}

std::optional<int64_t> SeedClaimNext(const fs::path& tasks_dir, const std::string& owner) {
  // TASK_MGR.list_all(): read every task file.
  std::vector<nlohmann::json> tasks;
  for (const auto& e : fs::directory_iterator(tasks_dir)) {
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (!j.is_discarded() && j.is_object()) tasks.push_back(std::move(j));
  }
  std::sort(tasks.begin(), tasks.end(),
            [](const auto& a, const auto& b) { return a["id"] < b["id"]; });
  for (auto& t : tasks) {
    if (t["status"] == "pending" && t["owner"] == "" && t["blockedBy"].empty()) {
      // TASK_MGR.update(id, status="in_progress", owner=name)
      t["status"] = "in_progress";
      t["owner"] = owner;
      int64_t id = t["id"];
      std::ofstream(tasks_dir / ("task_" + std::to_string(id) + ".json")) << t.dump();
      return id;
    }
  }
  return std::nullopt;
}

}  // namespace mates::seed
