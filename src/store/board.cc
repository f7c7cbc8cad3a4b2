#include "store/board.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/names.h"
#include "store/watcher.h"

namespace mates {

std::string TaskFileName(int64_t id) { return std::to_string(id) + ".json"; }

std::shared_ptr<Board> SharedBoard(const fs::path& dir) {
  static std::mutex mu;
  static auto* boards = new std::map<std::string, std::weak_ptr<Board>>();  // guarded by mu
  std::string key = dir.lexically_normal().string();
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*boards)[key];
  auto board = slot.lock();
  if (!board) {
    board = std::make_shared<Board>(dir);
    slot = board;
  }
  return board;
}

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

std::string TaskRef(int64_t id) { return "#" + std::to_string(id); }

Status NoTask(int64_t id) { return Status::NotFound("no task " + TaskRef(id)); }

// Metadata from a caller: a JSON object within the size bound (DESIGN §10).
Result<Json> ParseMetadata(const std::string& text) {
  if (text.size() > 4 * kMaxTaskMetadataBytes) {
    return Status::InvalidArgument("metadata is " + std::to_string(text.size()) +
                                   " bytes; a task's metadata may be " +
                                   std::to_string(kMaxTaskMetadataBytes) + " bytes at most");
  }
  auto md = ParseJson(text);
  if (!md.ok()) return Status::InvalidArgument("metadata: " + md.status().message());
  if (!md->is_object()) return Status::InvalidArgument("metadata must be a JSON object");
  return md;
}

Status CheckMetadataSize(const std::string& compact) {
  if (compact.size() > kMaxTaskMetadataBytes) {
    return Status::InvalidArgument("metadata would be " + std::to_string(compact.size()) +
                                   " bytes; a task's metadata may be " +
                                   std::to_string(kMaxTaskMetadataBytes) + " bytes at most");
  }
  return Status::Ok();
}

Board::FileStamp StampOf(const struct stat& st) {
  return {st.st_ino, st.st_size,
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
          static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

// One .index line: "id inode status owner blockers\n", '-' for none. An
// owner that is not a valid name (set by hand) is written '?': readers go to
// the file instead.
std::string IndexLine(const Task& t, ino_t ino) {
  std::string owner = t.owner.empty() ? "-" : t.owner;
  if (!t.owner.empty() && !ValidateName("owner", t.owner).ok()) owner = "?";
  std::string line = std::to_string(t.id) + " " + std::to_string(ino) + " " +
                     std::string(TaskStatusName(t.status)) + " " + owner + " ";
  if (t.blocked_by.empty()) line += "-";
  for (size_t i = 0; i < t.blocked_by.size(); ++i) {
    if (i > 0) line += ',';
    line += std::to_string(t.blocked_by[i]);
  }
  return line + "\n";
}

struct IndexRecord {
  int64_t id = 0;  // 0: not even the id could be read
  bool usable = false;
  ino_t ino = 0;
  TaskStatus status = TaskStatus::kPending;
  std::string owner;
  std::vector<int64_t> blocked_by;
};

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

IndexRecord ParseIndexLine(std::string_view line) {
  IndexRecord r;
  std::string_view f[5];
  for (int i = 0; i < 5; ++i) {
    size_t sp = i < 4 ? line.find(' ') : line.size();
    if (sp == std::string_view::npos) return r;
    f[i] = line.substr(0, sp);
    line.remove_prefix(std::min(line.size(), sp + 1));
  }
  int64_t id = 0;
  if (!ParseNumber(f[0], &id) || id < 1) return r;
  r.id = id;
  uint64_t ino = 0;
  auto status = ParseTaskStatus(f[2]);
  if (!ParseNumber(f[1], &ino) || !status.ok() || f[3] == "?") return r;
  r.ino = static_cast<ino_t>(ino);
  r.status = *status;
  if (f[3] != "-") r.owner = std::string(f[3]);
  if (f[4] != "-") {
    while (!f[4].empty()) {
      size_t comma = f[4].find(',');
      int64_t b = 0;
      if (!ParseNumber(f[4].substr(0, comma), &b) || b < 1) return r;
      r.blocked_by.push_back(b);
      f[4].remove_prefix(comma == std::string_view::npos ? f[4].size() : comma + 1);
    }
  }
  r.usable = true;
  return r;
}

Task TaskFromRecord(IndexRecord&& r) {
  Task t;
  t.id = r.id;
  t.status = r.status;
  t.owner = std::move(r.owner);
  t.blocked_by = std::move(r.blocked_by);
  return t;
}

}  // namespace

Board::Board(fs::path dir, Options options)
    : dir_(std::move(dir)),
      hwm_path_(dir_ / ".highwatermark"),
      index_path_(dir_ / ".index"),
      spare_path_(dir_ / ".spare") {
  (void)EnsureDir(dir_);
  if (!options.watch) return;
  // The watch comes before the first load so that no change falls between.
  inotify_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (inotify_.valid() &&
      ::inotify_add_watch(inotify_.get(), dir_.c_str(),
                          IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE) < 0) {
    inotify_.reset();
  }
  if (!inotify_.valid()) {
    LogDebug("board " + dir_.string() + ": no inotify, every operation reloads the index");
  }
}

Board::Entry* Board::FindLocked(int64_t id) {
  if (id < 1 || static_cast<size_t>(id) >= tasks_.size() || !tasks_[id].present) return nullptr;
  return &tasks_[id];
}

void Board::PutLocked(Task task, FileStamp stamp, bool full) {
  int64_t id = task.id;
  max_file_id_ = std::max(max_file_id_, id);
  if (tasks_.size() <= static_cast<size_t>(id)) tasks_.resize(static_cast<size_t>(id) + 1);
  Entry& e = tasks_[id];
  if (!e.present) ++live_;
  if (task.status == TaskStatus::kPending && task.owner.empty()) {
    open_.insert(id);
  } else {
    open_.erase(id);
  }
  e.present = true;
  e.full = full;
  e.task = std::move(task);
  e.stamp = stamp;
}

void Board::EraseLocked(int64_t id) {
  Entry* e = FindLocked(id);
  if (e == nullptr) return;
  *e = Entry{};
  --live_;
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
  Entry* e = FindLocked(id);
  if (!force && e != nullptr && e->full && e->stamp == StampOf(st)) return;  // already have it
  Result<Task> t = Status::Corrupt("it is " + std::to_string(st.st_size) +
                                   " bytes, more than a task file can be");
  if (static_cast<uint64_t>(st.st_size) <= kMaxStateFileBytes) {
    std::string data;
    data.resize(static_cast<size_t>(st.st_size));
    ssize_t n = st.st_size > 0 ? ::pread(fd.get(), data.data(), data.size(), 0) : 0;
    data.resize(n > 0 ? static_cast<size_t>(n) : 0);
    auto j = ParseJson(data);
    t = j.ok() ? TaskFromJson(*j) : Result<Task>(j.status());
  }
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
  Entry* e = FindLocked(id);
  if (e == nullptr) return NoTask(id);
  if (!e->full) {
    ReloadLocked(id, /*force=*/true);
    e = FindLocked(id);
    if (e == nullptr) return NoTask(id);
  }
  return e->task;
}

Status Board::OpenIndexLocked() {
  if (index_fd_.valid()) {
    struct stat a {}, b {};
    if (::fstat(index_fd_.get(), &a) == 0 && ::stat(index_path_.c_str(), &b) == 0 &&
        a.st_ino == b.st_ino) {
      return Status::Ok();
    }
  }
  index_fd_.reset(::open(index_path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!index_fd_.valid()) return Status::FromErrno("open " + index_path_.string(), errno);
  return Status::Ok();
}

Status Board::AppendIndexLocked(const Entry& e) {
  MATES_RETURN_IF_ERROR(OpenIndexLocked());
  MATES_RETURN_IF_ERROR(
      WriteAll(index_fd_.get(), IndexLine(e.task, e.stamp.ino), index_path_.c_str()));
  ++index_lines_;
  if (index_lines_ > 2 * live_ + 64) return CompactIndexLocked();
  return Status::Ok();
}

Status Board::CompactIndexLocked() {
  std::string data;
  for (const Entry& e : tasks_) {
    if (e.present) data += IndexLine(e.task, e.stamp.ino);
  }
  MATES_RETURN_IF_ERROR(WriteFileAtomic(index_path_, data));
  // What we just wrote is what we know: continue reading after it.
  struct stat st {};
  if (::stat(index_path_.c_str(), &st) == 0) {
    index_ino_ = st.st_ino;
    index_offset_ = static_cast<off_t>(data.size());
  }
  index_lines_ = live_;
  return Status::Ok();
}

bool Board::ReadIndexTailLocked(std::set<int64_t>* explained) {
  if (!fs::exists(index_path_)) return index_ino_ == 0;  // never had one: nothing to read
  if (!OpenIndexLocked().ok()) return false;
  int fd = index_fd_.get();
  struct stat st {};
  if (::fstat(fd, &st) != 0) return false;
  if (st.st_ino != index_ino_ || st.st_size < index_offset_) return false;  // compacted
  if (st.st_size == index_offset_) return true;
  std::string data(static_cast<size_t>(st.st_size - index_offset_), '\0');
  ssize_t n = ::pread(fd, data.data(), data.size(), index_offset_);
  if (n < 0) return false;
  std::string_view rest(data.data(), static_cast<size_t>(n));
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) break;  // not finished yet (cannot happen under the lock)
    IndexRecord r = ParseIndexLine(rest.substr(0, nl));
    index_offset_ += static_cast<off_t>(nl + 1);
    ++index_lines_;
    rest.remove_prefix(nl + 1);
    if (r.id == 0) continue;
    if (!r.usable) {
      ReloadLocked(r.id, /*force=*/true);
      explained->insert(r.id);
      continue;
    }
    Entry* e = FindLocked(r.id);
    // Our own write: the entry stays full, so it is not "explained" and a
    // change after it (by someone else) is still checked with a stat.
    if (e != nullptr && e->full && e->stamp.ino == r.ino) continue;
    explained->insert(r.id);
    FileStamp stamp;
    stamp.ino = r.ino;
    PutLocked(TaskFromRecord(std::move(r)), stamp, /*full=*/false);
  }
  return true;
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
  live_ = 0;
  // What the index says, the last line of an id winning.
  std::vector<IndexRecord> index;
  size_t indexed = 0;
  index_lines_ = 0;
  index_offset_ = 0;
  index_ino_ = 0;
  {
    ScopedFd fd(::open(index_path_.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (fd.valid() && ::fstat(fd.get(), &st) == 0) {
      index_ino_ = st.st_ino;
      std::string data(static_cast<size_t>(st.st_size), '\0');
      ssize_t n = ::pread(fd.get(), data.data(), data.size(), 0);
      std::string_view rest(data.data(), n > 0 ? static_cast<size_t>(n) : 0);
      while (!rest.empty()) {
        size_t nl = rest.find('\n');
        if (nl == std::string_view::npos) break;  // a torn last line
        IndexRecord r = ParseIndexLine(rest.substr(0, nl));
        index_offset_ += static_cast<off_t>(nl + 1);
        ++index_lines_;
        rest.remove_prefix(nl + 1);
        if (r.id == 0) continue;
        if (index.size() <= static_cast<size_t>(r.id)) index.resize(static_cast<size_t>(r.id) + 1);
        if (index[r.id].id == 0) ++indexed;
        index[r.id] = std::move(r);
      }
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
    if (static_cast<size_t>(id) < index.size() && index[id].usable && index[id].ino == ino) {
      FileStamp stamp;
      stamp.ino = ino;
      PutLocked(TaskFromRecord(std::move(index[id])), stamp, /*full=*/false);
      continue;
    }
    ReloadLocked(id, /*force=*/true);  // written behind the index's back
    healed = true;
  }
  loaded_ = true;
  // Bring the index up to date for the next cold reader.
  if (healed || indexed != files.size()) return CompactIndexLocked();
  return Status::Ok();
}

Status Board::RefreshLocked() {
  // Without a watch, foreign writes are only seen by a cold load.
  if (!loaded_ || !inotify_.valid()) return ColdLoadLocked();
  std::set<int64_t> explained;
  if (!ReadIndexTailLocked(&explained)) return ColdLoadLocked();
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
  // Files the index lines do not explain were written by someone else. (An
  // explained file is at most known partially now, so any operation that
  // returns or writes it reads it first: a claim's compare-and-set always
  // sees the file itself.)
  for (int64_t id : changed) {
    if (explained.count(id) > 0) continue;
    struct stat st {};
    if (::stat((dir_ / TaskFileName(id)).c_str(), &st) != 0) {
      EraseLocked(id);
      continue;
    }
    Entry* e = FindLocked(id);
    if (e != nullptr && e->stamp.ino == st.st_ino && (!e->full || e->stamp == StampOf(st))) continue;
    ReloadLocked(id, /*force=*/true);
  }
  return Status::Ok();
}

Status Board::WriteLocked(Task& task) {
  task.updated_at = WallSeconds();
  fs::path path = dir_ / TaskFileName(task.id);
  MATES_RETURN_IF_ERROR(ReplaceFileViaSpare(path, DumpJsonPretty(TaskToJson(task)), spare_path_));
  struct stat st {};
  FileStamp stamp = ::stat(path.c_str(), &st) == 0 ? StampOf(st) : FileStamp{};
  PutLocked(task, stamp, /*full=*/true);
  MATES_RETURN_IF_ERROR(AppendIndexLocked(tasks_[task.id]));
  Watcher::Default().NotifyLocal(dir_, TaskFileName(task.id));
  return Status::Ok();
}

std::string Board::BlockedReasonLocked(const Task& t) const {
  std::string why;
  for (int64_t b : t.blocked_by) {
    const Entry* e = (b >= 1 && static_cast<size_t>(b) < tasks_.size() && tasks_[b].present)
                         ? &tasks_[b]
                         : nullptr;
    if (e != nullptr && (e->task.status == TaskStatus::kCompleted ||
                         e->task.status == TaskStatus::kDeleted)) {
      continue;
    }
    if (!why.empty()) why += ", ";
    why += TaskRef(b) + (e == nullptr ? std::string(" (missing)")
                                      : " (" + std::string(TaskStatusName(e->task.status)) + ")");
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
    if (cur < 1 || static_cast<size_t>(cur) >= tasks_.size() || !tasks_[cur].present) continue;
    for (int64_t b : tasks_[cur].task.blocked_by) stack.push_back(b);
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
  std::string metadata = "{}";
  if (!draft.metadata_json.empty()) {
    MATES_ASSIGN_OR_RETURN(Json md, ParseMetadata(draft.metadata_json));
    metadata = DumpJson(md);
    MATES_RETURN_IF_ERROR(CheckMetadataSize(metadata));
  }
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  std::vector<int64_t> blockers;
  for (int64_t b : draft.blocked_by) {
    Entry* e = FindLocked(b);
    if (e == nullptr || e->task.status == TaskStatus::kDeleted) return NoTask(b);
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
  MATES_RETURN_IF_ERROR(ReplaceFileViaSpare(hwm_path_, std::to_string(t.id) + "\n", spare_path_));
  for (int64_t b : blockers) {
    MATES_ASSIGN_OR_RETURN(Task blocker, FullTaskLocked(b));
    blocker.blocks.push_back(t.id);
    MATES_RETURN_IF_ERROR(WriteLocked(blocker));
  }
  return t;
}

Result<Task> Board::Get(int64_t id) {
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  return FullTaskLocked(id);
}

Result<std::vector<Task>> Board::List(bool include_deleted) {
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  std::vector<int64_t> ids;
  for (size_t id = 1; id < tasks_.size(); ++id) {
    const Entry& e = tasks_[id];
    if (e.present && (include_deleted || e.task.status != TaskStatus::kDeleted)) {
      ids.push_back(static_cast<int64_t>(id));
    }
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
    MATES_ASSIGN_OR_RETURN(metadata_patch, ParseMetadata(*patch.metadata_json));
  }
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  MATES_ASSIGN_OR_RETURN(Task t, FullTaskLocked(id));
  const std::string ref = "task " + TaskRef(id);
  // Deleted is final: a deleted task holds no one back and takes no
  // dependencies, so nothing may bring it back.
  if (t.status == TaskStatus::kDeleted) {
    return Status::FailedPrecondition(ref + " is deleted; create a new task instead");
  }

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

  if (patch.status == TaskStatus::kDeleted &&
      (!patch.add_blocked_by.empty() || !patch.add_blocks.empty())) {
    return Status::InvalidArgument(ref + ": a task being deleted takes no new dependencies");
  }
  // Validate every dependency before writing anything.
  std::vector<int64_t> add_blocked_by;
  for (int64_t b : patch.add_blocked_by) {
    if (b == id) return Status::InvalidArgument(ref + " cannot block itself");
    Entry* e = FindLocked(b);
    if (e == nullptr || e->task.status == TaskStatus::kDeleted) return NoTask(b);
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
    Entry* e = FindLocked(b);
    if (e == nullptr || e->task.status == TaskStatus::kDeleted) return NoTask(b);
    const auto& bb = e->task.blocked_by;
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
    auto current = ParseJson(t.metadata_json);
    Json md = current.ok() && current->is_object() ? std::move(*current) : Json::object();
    for (auto& [k, v] : metadata_patch.items()) {
      if (v.is_null()) {
        md.erase(k);
      } else {
        md[k] = v;
      }
    }
    t.metadata_json = DumpJson(md);
    MATES_RETURN_IF_ERROR(CheckMetadataSize(t.metadata_json));
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
  // A deleted task's dependencies are dropped on both sides (below for the
  // others): it keeps no one-sided link.
  std::vector<int64_t> former_links;
  if (t.status == TaskStatus::kDeleted) {
    former_links = t.blocked_by;
    former_links.insert(former_links.end(), t.blocks.begin(), t.blocks.end());
    t.blocked_by.clear();
    t.blocks.clear();
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
    std::set<int64_t> touched(former_links.begin(), former_links.end());
    for (size_t oid = 1; oid < tasks_.size(); ++oid) {
      const Entry& e = tasks_[oid];
      if (!e.present || static_cast<int64_t>(oid) == id) continue;
      const auto& bb = e.task.blocked_by;
      if (std::find(bb.begin(), bb.end(), id) != bb.end()) touched.insert(static_cast<int64_t>(oid));
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
  Entry* e = FindLocked(id);
  if (e == nullptr || e->task.status == TaskStatus::kDeleted) return NoTask(id);
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
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  return ClaimLocked(id, owner);
}

std::optional<int64_t> Board::NextClaimableLocked(const std::string& owner) {
  // Candidates come from what the index says; each is confirmed from its
  // file, so a task file cut short or edited into garbage (skipped, and
  // reported once) never stands in the way of the tasks after it.
  auto confirmed = [&](int64_t id, bool assigned) {
    auto t = FullTaskLocked(id);
    if (!t.ok()) return false;
    bool owner_ok = assigned ? t->owner == owner : t->owner.empty();
    return owner_ok && t->status == TaskStatus::kPending && BlockedReasonLocked(*t).empty();
  };
  for (size_t id = 1; id < tasks_.size(); ++id) {
    const Entry& e = tasks_[id];
    if (e.present && e.task.status == TaskStatus::kPending && e.task.owner == owner &&
        BlockedReasonLocked(e.task).empty() && confirmed(static_cast<int64_t>(id), true)) {
      return static_cast<int64_t>(id);
    }
  }
  // Copied: confirming a candidate may drop it from open_.
  std::vector<int64_t> open(open_.begin(), open_.end());
  for (int64_t id : open) {
    Entry* e = FindLocked(id);
    if (e != nullptr && ClaimableLocked(e->task) && confirmed(id, false)) return id;
  }
  return std::nullopt;
}

Result<std::optional<int64_t>> Board::NextClaimable(const std::string& owner) {
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  return NextClaimableLocked(owner);
}

Result<std::optional<Task>> Board::ClaimNext(const std::string& owner) {
  MATES_RETURN_IF_ERROR(ValidateName("owner name", owner));
  std::lock_guard<std::mutex> guard(mu_);
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::AcquireFolder(dir_));
  MATES_RETURN_IF_ERROR(RefreshLocked());
  auto id = NextClaimableLocked(owner);
  if (!id) return std::optional<Task>();
  MATES_ASSIGN_OR_RETURN(Task t, ClaimLocked(*id, owner));
  return std::optional<Task>(std::move(t));
}

}  // namespace mates
