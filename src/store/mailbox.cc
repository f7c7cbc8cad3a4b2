#include "store/mailbox.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/log.h"
#include "store/watcher.h"

namespace mates {

Mailbox::Mailbox(fs::path team_dir, std::string member, Watcher* local)
    : dir_(std::move(team_dir)), member_(std::move(member)), local_(local) {
  inbox_ = dir_ / (member_ + "_inbox.jsonl");
  lock_ = dir_ / (member_ + "_inbox.lock");
  draining_ = dir_ / (member_ + "_inbox.draining");
  quarantine_ = dir_ / (member_ + "_inbox.quarantine");
}

Status Mailbox::Append(const Message& m) const {
  const std::string line = MessageToLine(m);
  {
    MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_, FileLock::Range::kAppend,
                                                            FileLock::Mode::kShared));
    // Read-write: the last byte is read back below (pread fails on O_WRONLY).
    ScopedFd fd(::open(inbox_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
    if (!fd.valid()) return Status::FromErrno("open " + inbox_.string(), errno);
    // A writer killed inside write() can leave a line without its newline;
    // start ours on a fresh line so that only the torn one is lost.
    struct stat st {};
    char last = '\n';
    const bool have_stat = ::fstat(fd.get(), &st) == 0;
    if (have_stat && st.st_size > 0 &&
        ::pread(fd.get(), &last, 1, st.st_size - 1) == 1 && last != '\n') {
      MATES_RETURN_IF_ERROR(WriteAll(fd.get(), "\n" + line, inbox_.c_str()));
    } else {
      MATES_RETURN_IF_ERROR(WriteAll(fd.get(), line, inbox_.c_str()));
    }
    // The drain renames the inbox only under byte 0 held exclusively, so
    // the file we wrote is still the inbox. Unless the lock file was
    // deleted under us (DESIGN §10): then a drain may have taken the file
    // already, and the line goes in again (delivered at least once; ids
    // suppress the second copy).
    struct stat now {};
    if (have_stat &&
        (::stat(inbox_.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev)) {
      ScopedFd again(::open(inbox_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
      if (!again.valid()) return Status::FromErrno("open " + inbox_.string(), errno);
      MATES_RETURN_IF_ERROR(WriteAll(again.get(), "\n" + line, inbox_.c_str()));
    }
  }
  if (local_ != nullptr) local_->NotifyLocal(dir_, inbox_.filename().string());
  return Status::Ok();
}

void Mailbox::Quarantine(const std::string& line, const fs::path& source,
                         const Status& why) const {
  LogWarning("quarantined a bad line of " + source.string() + " (" + why.message() +
             ") into " + quarantine_.string());
  ScopedFd fd(::open(quarantine_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (fd.valid()) (void)WriteAll(fd.get(), line + "\n", quarantine_.c_str());
}

void Mailbox::ParseLines(const std::string& data, const fs::path& source, bool quarantine,
                         const AlreadyDelivered& already_delivered,
                         std::unordered_set<std::string>* seen,
                         std::vector<Message>* out) const {
  size_t start = 0;
  while (start < data.size()) {
    size_t end = data.find('\n', start);
    if (end == std::string::npos) end = data.size();
    std::string line = data.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto parsed = ParseMessageLine(line);
    if (!parsed.ok()) {
      if (quarantine) {
        Quarantine(line, source, parsed.status());
      } else {
        LogWarning("skipping a bad line of " + source.string() + ": " + parsed.status().message());
      }
      continue;
    }
    Message& m = *parsed;
    if (!seen->insert(m.id).second) continue;
    if (already_delivered && already_delivered(m.id)) continue;
    out->push_back(std::move(m));
  }
}

Result<std::vector<Message>> Mailbox::Peek() const {
  std::vector<Message> out;
  std::unordered_set<std::string> seen;
  // Hold the append lock so no half-written line is seen.
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_, FileLock::Range::kAppend));
  for (const fs::path& p : {draining_, inbox_}) {
    auto data = ReadFile(p);
    if (!data.ok()) {
      if (data.status().code() == StatusCode::kNotFound) continue;
      return data.status();
    }
    ParseLines(*data, p, /*quarantine=*/false, {}, &seen, &out);
  }
  return out;
}

bool Mailbox::MayHavePending() const {
  struct stat st {};
  if (::stat(draining_.c_str(), &st) == 0) return true;
  return ::stat(inbox_.c_str(), &st) == 0 && st.st_size > 0;
}

Result<size_t> Mailbox::PendingCount() const {
  size_t n = 0;
  for (const fs::path& p : {draining_, inbox_}) {
    auto data = ReadFile(p);
    if (!data.ok()) {
      if (data.status().code() == StatusCode::kNotFound) continue;
      return data.status();
    }
    size_t start = 0;
    while (start < data->size()) {
      size_t end = data->find('\n', start);
      if (end == std::string::npos) end = data->size();
      if (data->find_first_not_of(" \t\r", start) < end) ++n;
      start = end + 1;
    }
  }
  return n;
}

Result<Mailbox::Batch> Mailbox::BeginDrain(const AlreadyDelivered& already_delivered) const {
  Batch batch;
  MATES_ASSIGN_OR_RETURN(FileLock drain_lock, FileLock::Acquire(lock_, FileLock::Range::kDrain));
  batch.drain_lock.emplace(std::move(drain_lock));
  batch.draining_path = draining_;

  struct stat st {};
  if (::stat(draining_.c_str(), &st) == 0) {
    batch.redelivery = true;  // a reader died between taking and committing
  } else {
    MATES_ASSIGN_OR_RETURN(FileLock append_lock, FileLock::Acquire(lock_, FileLock::Range::kAppend));
    if (::rename(inbox_.c_str(), draining_.c_str()) != 0) {
      if (errno == ENOENT) return batch;  // empty inbox
      return Status::FromErrno("rename " + inbox_.string(), errno);
    }
  }
  auto data = ReadFile(draining_);
  if (!data.ok()) return data.status();
  std::unordered_set<std::string> seen;
  ParseLines(*data, draining_, /*quarantine=*/true, already_delivered, &seen, &batch.messages);
  return batch;
}

Status Mailbox::Commit(Batch& batch) const {
  if (!batch.drain_lock.has_value()) return Status::Ok();
  if (::unlink(batch.draining_path.c_str()) != 0 && errno != ENOENT) {
    return Status::FromErrno("unlink " + batch.draining_path.string(), errno);
  }
  batch.drain_lock.reset();
  return Status::Ok();
}

Result<std::vector<Message>> Mailbox::Drain(const AlreadyDelivered& already_delivered) const {
  std::vector<Message> out;
  std::unordered_set<std::string> ids;
  // At most two rounds: what a dead reader left, then the inbox itself.
  for (int round = 0; round < 2; ++round) {
    MATES_ASSIGN_OR_RETURN(Batch batch, BeginDrain(already_delivered));
    for (auto& m : batch.messages) {
      if (ids.insert(m.id).second) out.push_back(std::move(m));
    }
    bool again = batch.redelivery;
    MATES_RETURN_IF_ERROR(Commit(batch));
    if (!again) break;
  }
  return out;
}

}  // namespace mates
