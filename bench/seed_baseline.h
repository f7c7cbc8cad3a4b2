// The seeds' mechanism, written in C++ so that benchmarks compare like with
// like (seed v8 _write_to_inbox / check_inbox, seed v9 idle loop and
// auto-claim). Deliberately faithful, defects included:
// - an O_EXCL lock *file*, 50 tries 50 ms apart, after which the writer
//   writes without the lock; a dead holder's file is never removed;
// - drain = read everything, then truncate (write_text(""));
// - idle = poll every 1 s;
// - claim = list and read every task file, take the first pending unowned
//   unblocked one, write it back; the seed's lock is a threading.Lock, so
//   nothing excludes other processes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace mates::seed {

namespace fs = std::filesystem;

class SeedMailbox {
 public:
  SeedMailbox(fs::path dir, std::string member);
  void Append(const std::string& json_line);  // line with its '\n'
  std::vector<std::string> Drain();           // read all, truncate
 private:
  bool LockFile();  // false after 50 failed tries (then proceeds unlocked)
  void UnlockFile();
  fs::path inbox_, lock_;
};

// Seed v9 claim: full scan, no cross-process exclusion. Returns the id.
std::optional<int64_t> SeedClaimNext(const fs::path& tasks_dir, const std::string& owner);
// Writes tasks 1..n as the seed's task files (pending, unowned).
void SeedCreateTasks(const fs::path& tasks_dir, int n);

}  // namespace mates::seed
