#include "store/board.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/log.h"
#include "core/names.h"
#include "store/watcher.h"

namespace mates {

std::string TaskFileName(int64_t id) { return std::to_string(id) + ".json"; }

int64_t TaskIdFromFileName(std::string_view name) {
  constexpr std::string_view kExt = ".json";
  if (name.size() <= kExt.size() || name.substr(name.size() - kExt.size()) != kExt) return 0;
  std::string_view stem = name.substr(0, name.size() - kExt.size());
  int64_t id = 0;
  auto [p, ec] = std::from_chars(stem.data(), stem.data() + stem.size(), id);
  if (ec != std::errc() || p != stem.data() + stem.size() || id < 1) return 0;
  return id;
}

namespace {

Board::FileStamp StampOf(const struct stat& st) {
  return {st.st_ino, st.st_size,
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

std::string TaskRef(int64_t id) { return "#" + std::to_string(id); }

Status NoTask(int64_t id) { return Status::NotFound("no task " + TaskRef(id)); }

}  // namespace

Board::Board(fs::path dir)
    : dir_(std::move(dir)),
      lock_path_(dir_ / ".lock"),
      hwm_path_(dir_ / ".highwatermark"),
      index_path_(dir_ / ".index") {
  (void)EnsureDir(dir_);
  // The watch comes before the first load so that no change falls between.
  inotify_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (inotify_.valid() &&
      ::inotify_add_watch(inotify_.get(), dir_.c_str(),
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE) < 0) {
    inotify_.reset();
  }
  if (!inotify_.valid()) {
    LogDebug("board " + dir_.string() + ": no inotify, every operation rechecks the index");
  }
}

void Board::PutLocked(Task task, FileStamp stamp, bool full) {
  int64_t id = task.id;
  max_file_id_ = std::max(max_file_id_, id);
  if (task.status == TaskStatus::kPending && task.owner.empty()) {
    open_.insert(id);
  } else {
    open_.erase(id);
  }
  tasks_[id] = Entry{std::move(task), stamp, full};
}

void Board::EraseLocked(int64_t id) {
  tasks_.erase(id);
  open_.erase(id);
}

void Board::ReloadLocked(int64_t id, bool force) {
  fs::path path = dir_ / TaskFileName(id);
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    EraseLocked(id);
    return;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return;
  max_file_id_ = std::max(max_file_id_, id);
  auto it = tasks_.find(id);
  if (!force && it != tasks_.end() && it->second.stamp == StampOf(st)) return;  // our own write
  std::string data;
  data.resize(static_cast<size_t>(st.st_size));
  ssize_t n = st.st_size > 0 ? ::pread(fd.get(), data.data(), data.size(), 0) : 0;
  data.resize(n > 0 ? static_cast<size_t>(n) : 0);
  auto j = ParseJson(data);
  Result<Task> t = j.ok() ? TaskFromJson(*j) : Result<Task>(j.status());
  if (t.ok() && t->id != id) {
    t = Status::InvalidArgument("its id is " + std::to_string(t->id));
  }
  if (!t.ok()) {
    EraseLocked(id);
    if (reported_corrupt_.insert({id, st.st_ino}).second) {
      LogWarning("task file " + path.string() + " is unreadable and is ignored (" +
                 t.status().message() + ")");
    }
    return;
  }
  PutLocked(std::move(*t), StampOf(st), /*full=*/true);
}

Result<Task> Board::FullTaskLocked(int64_t id) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return NoTask(id);
  if (!it->second.full) {
    ReloadLocked(id, /*force=*/true);
    it = tasks_.find(id);
    if (it == tasks_.end()) return NoTask(id);
  }
  return it->second.task;
}

namespace {

// One index line: "id inode status owner blockers", '-' for none; an owner
// that is not a valid name (set by hand) is written '?' so that readers go
// to the file instead.
std::string IndexLine(const Task& t, ino_t ino) {
  std::string owner = t.owner.empty() ? "-" : t.owner;
  if (!t.owner.empty() && !ValidateName("owner", t.owner).ok()) owner = "?";
  std::string blockers;
  for (int64_t b : t.blocked_by) {
    if (!blockers.empty()) blockers += ',';
    blockers += std::to_string(b);
  }
  return std::to_string(t.id) + " " + std::to_string(ino) + " " +
         std::string(TaskStatusName(t.status)) + " " + owner + " " +
         (blockers.empty() ? "-" : blockers) + "\n";
}

struct IndexRecord {
  ino_t ino = 0;
  Task task;  // id, status, owner, blocked_by
  bool usable = false;
};

// Parses one index line; `usable` is false for torn or '?' lines.
IndexRecord ParseIndexLine(std::string_view line) {
  IndexRecord r;
  std::string_view f[5];
  for (int i = 0; i < 5; ++i) {
    size_t sp = i < 4 ? line.find(' ') : line.size();
    if (sp == std::string_view::npos) return r;
    f[i] = line.substr(0, sp);
    line.remove_prefix(std::min(line.size(), sp + 1));
  }
  r.task.id = TaskIdFromFileName(std::string(f[0]) + ".json");
  uint64_t ino = 0;
  auto [p, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), ino);
  auto status = ParseTaskStatus(f[2]);
  if (r.task.id == 0 || ec != std::errc() || !status.ok() || f[3] == "?") return r;
  r.ino = static_cast<ino_t>(ino);
  r.task.status = *status;
  if (f[3] != "-") r.task.owner = std::string(f[3]);
  if (f[4] != "-") {
    while (!f[4].empty()) {
      size_t comma = f[4].find(',');
      std::string_view piece = f[4].substr(0, comma);
      int64_t b = 0;
      auto [bp, bec] = std::from_chars(piece.data(), piece.data() + piece.size(), b);
      if (bec != std::errc() || b < 1) return r;
      r.task.blocked_by.push_back(b);
      f[4].remove_prefix(comma == std::string_view::npos ? f[4].size() : comma + 1);
    }
  }
  r.usable = true;
  return r;
}

}  // namespace

Status Board::AppendIndexLocked(const Entry& e) {
  ScopedFd fd(::open(index_path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return Status::FromErrno("open " + index_path_.string(), errno);
  MATES_RETURN_IF_ERROR(WriteAll(fd.get(), IndexLine(e.task, e.stamp.ino), index_path_.c_str()));
  ++index_lines_;
  if (index_lines_ > 2 * tasks_.size() + 64) return CompactIndexLocked();
  return Status::Ok();
}

Status Board::CompactIndexLocked() {
  std::string data;
  for (const auto& [id, e] : tasks_) data += IndexLine(e.task, e.stamp.ino);
  MATES_RETURN_IF_ERROR(WriteFileAtomic(index_path_, data));
  index_lines_ = tasks_.size();
  return Status::Ok();
}

Status Board::ColdLoadLocked() {
  // Stale events are covered by this load.
  if (inotify_.valid()) {
    char buf[16384];
    while (::read(inotify_.get(), buf, sizeof buf) > 0) {
    }
  }
  tasks_.clear();
  open_.clear();
  // What the index says, the last line of an id winning.
  std::map<int64_t, IndexRecord> index;
  index_lines_ = 0;
  auto data = ReadFile(index_path_);
  if (data.ok()) {
    std::string_view rest = *data;
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      if (nl == std::string_view::npos) break;  // a torn last line
      IndexRecord r = ParseIndexLine(rest.substr(0, nl));
      rest.remove_prefix(nl + 1);
      ++index_lines_;
      if (r.task.id > 0) index[r.task.id] = std::move(r);
    }
  }
  // What is on disk: readdir() gives each file's inode without a stat.
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return Status::FromErrno("open " + dir_.string(), errno);
  std::vector<std::pair<int64_t, ino_t>> files;
  while (struct dirent* e = ::readdir(d)) {
    int64_t id = TaskIdFromFileName(e->d_name);
    if (id > 0) files.emplace_back(id, e->d_ino);
  }
  ::closedir(d);
  bool healed = false;
  for (const auto& [id, ino] : files) {
    auto it = index.find(id);
    if (it != index.end() && it->second.usable && it->second.ino == ino) {
      FileStamp stamp;
      stamp.ino = ino;
      PutLocked(std::move(it->second.task), stamp, /*full=*/false);
      continue;
    }
    ReloadLocked(id, /*force=*/true);  // written behind the index's back
    healed = true;
  }
  loaded_ = true;
  // Bring the index up to date for the next cold reader.
  if (healed || tasks_.size() != index.size()) return CompactIndexLocked();
  return Status::Ok();
}

Status Board::RefreshLocked() {
  if (!loaded_ || !inotify_.valid()) return ColdLoadLocked();
  alignas(struct inotify_event) char buf[64 * 1024];
  std::set<int64_t> changed;
  bool overflow = false;
  for (;;) {
    ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      if ((ev->mask & IN_Q_OVERFLOW) != 0) overflow = true;
      if (ev->len == 0) continue;
      int64_t id = TaskIdFromFileName(ev->name);
      if (id > 0) changed.insert(id);
    }
  }
  if (overflow) return ColdLoadLocked();
  for (int64_t id : changed) ReloadLocked(id);
  return Status::Ok();
}

Status Board::WriteLocked(Task& task) {
  task.updated_at = WallSeconds();
  fs::path path = dir_ / TaskFileName(task.id);
  MATES_RETURN_IF_ERROR(WriteFileAtomic(path, DumpJsonPretty(TaskToJson(task))));
  struct stat st {};
  FileStamp stamp = ::stat(path.c_str(), &st) == 0 ? StampOf(st) : FileStamp{};
  PutLocked(task, stamp, /*full=*/true);
  MATES_RETURN_IF_ERROR(AppendIndexLocked(tasks_.at(task.id)));
  Watcher::Default().NotifyLocal(dir_, TaskFileName(task.id));
  return Status::Ok();
}

std::string Board::BlockedReasonLocked(const Task& t) const {
  std::string why;
  for (int64_t b : t.blocked_by) {
    auto it = tasks_.find(b);
    if (it != tasks_.end() && (it->second.task.status == TaskStatus::kCompleted ||
                               it->second.task.status == TaskStatus::kDeleted)) {
      continue;
    }
    if (!why.empty()) why += ", ";
    why += TaskRef(b) + (it == tasks_.end()
                             ? std::string(" (missing)")
                             : " (" + std::string(TaskStatusName(it->second.task.status)) + ")");
  }
  return why;
}

bool Board::ClaimableLocked(const Task& t) const {
  return t.status == TaskStatus::kPending && t.owner.empty() && BlockedReasonLocked(t).empty();
}

bool Board::DependsOnLocked(int64_t from, int64_t target) const {
  std::vector<int64_t> stack = {from};
  std::set<int64_t> visited;
  while (!stack.empty()) {
    int64_t cur = stack.back();
    stack.pop_back();
    if (cur == target) return true;
    if (!visited.insert(cur).second) continue;
    auto it = tasks_.find(cur);
    if (it == tasks_.end()) continue;
    for (int64_t b : it->second.task.blocked_by) stack.push_back(b);
  }
  return false;
}

int64_t Board::NextIdLocked() {
  int64_t hwm = 0;
  auto data = ReadFile(hwm_path_);
  if (data.ok()) {
    std::string s = *data;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    std::from_chars(s.data(), s.data() + s.size(), hwm);
  }
  return std::max(hwm, max_file_id_) + 1;
}

Result<Task> Board::Create(const TaskDraft& draft) {
  if (draft.subject.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("a task needs a subject");
  }
  std::string metadata = draft.metadata_json.empty() ? "{}" : draft.metadata_json;
  {
    auto md = ParseJson(metadata);
    if (!md.ok() || !md->is_object()) return Status::InvalidArgument("metadata must be a JSON object");
  }
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_path_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  std::vector<int64_t> blockers;
  for (int64_t b : draft.blocked_by) {
    auto it = tasks_.find(b);
    if (it == tasks_.end() || it->second.task.status == TaskStatus::kDeleted) return NoTask(b);
    if (std::find(blockers.begin(), blockers.end(), b) == blockers.end()) blockers.push_back(b);
  }
  Task t;
  t.id = NextIdLocked();
  t.subject = draft.subject;
  t.description = draft.description;
  t.active_form = draft.active_form;
  t.blocked_by = blockers;
  t.metadata_json = metadata;
  t.created_at = WallSeconds();
  MATES_RETURN_IF_ERROR(WriteLocked(t));
  MATES_RETURN_IF_ERROR(WriteFileAtomic(hwm_path_, std::to_string(t.id) + "\n"));
  for (int64_t b : blockers) {
    MATES_ASSIGN_OR_RETURN(Task blocker, FullTaskLocked(b));
    blocker.blocks.push_back(t.id);
    MATES_RETURN_IF_ERROR(WriteLocked(blocker));
  }
  return t;
}

Result<Task> Board::Get(int64_t id) {
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_path_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  return FullTaskLocked(id);
}

Result<std::vector<Task>> Board::List(bool include_deleted) {
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_path_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  std::vector<int64_t> ids;
  for (const auto& [id, e] : tasks_) {
    if (include_deleted || e.task.status != TaskStatus::kDeleted) ids.push_back(id);
  }
  std::vector<Task> out;
  out.reserve(ids.size());
  for (int64_t id : ids) {
    auto t = FullTaskLocked(id);
    if (t.ok()) out.push_back(std::move(*t));  // else: unreadable, reported
  }
  return out;
}

Result<Task> Board::Update(int64_t id, const TaskPatch& patch, const Caller& caller) {
  if (patch.owner.has_value() && !patch.owner->empty()) {
    MATES_RETURN_IF_ERROR(ValidateName("owner name", *patch.owner));
  }
  if (patch.subject.has_value() && patch.subject->find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::InvalidArgument("a task's subject cannot be empty");
  }
  Json metadata_patch;
  if (patch.metadata_json.has_value()) {
    auto md = ParseJson(*patch.metadata_json);
    if (!md.ok() || !md->is_object()) return Status::InvalidArgument("metadata must be a JSON object");
    metadata_patch = std::move(*md);
  }
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_path_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  MATES_ASSIGN_OR_RETURN(Task t, FullTaskLocked(id));
  const std::string ref = "task " + TaskRef(id);

  // Who may do what: a teammate works on its own or unowned tasks only.
  if (!caller.is_lead && !t.owner.empty() && t.owner != caller.name) {
    if (patch.owner.has_value() && *patch.owner != t.owner) {
      return Status::FailedPrecondition(ref + " is owned by '" + t.owner +
                                        "'; only the lead can reassign it");
    }
    if (patch.status.has_value() && *patch.status != t.status) {
      return Status::FailedPrecondition(ref + " is owned by '" + t.owner +
                                        "'; only its owner or the lead can change its status");
    }
  }

  // Validate every dependency before writing anything.
  std::vector<int64_t> add_blocked_by;
  for (int64_t b : patch.add_blocked_by) {
    if (b == id) return Status::InvalidArgument(ref + " cannot block itself");
    auto bit = tasks_.find(b);
    if (bit == tasks_.end() || bit->second.task.status == TaskStatus::kDeleted) return NoTask(b);
    if (std::find(t.blocked_by.begin(), t.blocked_by.end(), b) != t.blocked_by.end()) continue;
    if (DependsOnLocked(b, id)) {
      return Status::FailedPrecondition("dependency cycle: " + TaskRef(b) + " already waits on " +
                                        TaskRef(id));
    }
    add_blocked_by.push_back(b);
  }
  std::vector<int64_t> add_blocks;
  for (int64_t b : patch.add_blocks) {
    if (b == id) return Status::InvalidArgument(ref + " cannot block itself");
    auto bit = tasks_.find(b);
    if (bit == tasks_.end() || bit->second.task.status == TaskStatus::kDeleted) return NoTask(b);
    const auto& bb = bit->second.task.blocked_by;
    if (std::find(bb.begin(), bb.end(), id) != bb.end()) continue;
    if (DependsOnLocked(id, b) ||
        std::find(add_blocked_by.begin(), add_blocked_by.end(), b) != add_blocked_by.end()) {
      return Status::FailedPrecondition("dependency cycle: " + TaskRef(id) + " already waits on " +
                                        TaskRef(b));
    }
    add_blocks.push_back(b);
  }

  if (patch.subject) t.subject = *patch.subject;
  if (patch.description) t.description = *patch.description;
  if (patch.active_form) t.active_form = *patch.active_form;
  if (patch.owner) t.owner = *patch.owner;
  if (patch.metadata_json) {
    Json md = ParseJson(t.metadata_json).ok() ? *ParseJson(t.metadata_json) : Json::object();
    if (!md.is_object()) md = Json::object();
    for (auto& [k, v] : metadata_patch.items()) {
      if (v.is_null()) {
        md.erase(k);
      } else {
        md[k] = v;
      }
    }
    t.metadata_json = DumpJson(md);
  }
  for (int64_t b : add_blocked_by) t.blocked_by.push_back(b);
  for (int64_t b : add_blocks) t.blocks.push_back(b);
  if (patch.status && *patch.status != t.status) {
    if (*patch.status == TaskStatus::kInProgress) {
      std::string why = BlockedReasonLocked(t);
      if (!why.empty()) return Status::FailedPrecondition(ref + " is blocked by " + why);
      if (t.owner.empty() && !caller.is_lead && !caller.name.empty()) t.owner = caller.name;
    }
    t.status = *patch.status;
  }

  MATES_RETURN_IF_ERROR(WriteLocked(t));
  // The other side of each new dependency.
  for (int64_t b : add_blocked_by) {
    MATES_ASSIGN_OR_RETURN(Task other, FullTaskLocked(b));
    other.blocks.push_back(id);
    MATES_RETURN_IF_ERROR(WriteLocked(other));
  }
  for (int64_t b : add_blocks) {
    MATES_ASSIGN_OR_RETURN(Task other, FullTaskLocked(b));
    other.blocked_by.push_back(id);
    MATES_RETURN_IF_ERROR(WriteLocked(other));
  }
  // A deleted task no longer holds anyone back: drop it from its
  // dependents' blockedBy and its blockers' blocks.
  if (t.status == TaskStatus::kDeleted) {
    std::set<int64_t> touched(t.blocked_by.begin(), t.blocked_by.end());
    for (const auto& [oid, e] : tasks_) {
      const auto& bb = e.task.blocked_by;
      if (oid != id && std::find(bb.begin(), bb.end(), id) != bb.end()) touched.insert(oid);
    }
    for (int64_t oid : touched) {
      auto other = FullTaskLocked(oid);
      if (!other.ok()) continue;  // gone or unreadable: nothing to keep consistent
      auto n = std::erase(other->blocked_by, id) + std::erase(other->blocks, id);
      if (n > 0) MATES_RETURN_IF_ERROR(WriteLocked(*other));
    }
  }
  return t;
}

Result<Task> Board::ClaimLocked(int64_t id, const std::string& owner) {
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.task.status == TaskStatus::kDeleted) return NoTask(id);
  MATES_ASSIGN_OR_RETURN(Task t, FullTaskLocked(id));
  const std::string ref = "task " + TaskRef(id);
  if (t.owner == owner && t.status == TaskStatus::kInProgress) return t;  // already ours
  if (!t.owner.empty() && t.owner != owner) {
    return Status::Conflict(ref + " is already claimed by '" + t.owner + "'");
  }
  if (t.status != TaskStatus::kPending) {
    return Status::Conflict(ref + " is " + std::string(TaskStatusName(t.status)));
  }
  std::string why = BlockedReasonLocked(t);
  if (!why.empty()) return Status::FailedPrecondition(ref + " is blocked by " + why);
  t.owner = owner;
  t.status = TaskStatus::kInProgress;
  MATES_RETURN_IF_ERROR(WriteLocked(t));
  return t;
}

Result<Task> Board::Claim(int64_t id, const std::string& owner) {
  MATES_RETURN_IF_ERROR(ValidateName("owner name", owner));
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_path_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  return ClaimLocked(id, owner);
}

Result<std::optional<Task>> Board::ClaimNext(const std::string& owner) {
  MATES_RETURN_IF_ERROR(ValidateName("owner name", owner));
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(lock_path_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  for (int64_t id : open_) {
    if (ClaimableLocked(tasks_.at(id).task)) {
      MATES_ASSIGN_OR_RETURN(Task t, ClaimLocked(id, owner));
      return std::optional<Task>(std::move(t));
    }
  }
  return std::optional<Task>();
}

}  // namespace mates
