// The board's index cache (see board.h): reading `.index` cold and by its
// tail, telling which task files were written behind its back, reading
// task files (bounded, validated: a corrupt one is skipped and reported
// once), and writing a task with its index line.
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
#include "core/limits.h"
#include "core/log.h"
#include "core/names.h"
#include "store/board.h"
#include "store/watcher.h"

namespace mates {

namespace {

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
  if (!ParseNumber(f[0], &id) || id < 1 || id > kMaxTaskId) return r;
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
      if (!ParseNumber(f[4].substr(0, comma), &b) || b < 1 || b > kMaxTaskId) return r;
      r.blocked_by.push_back(b);
      f[4].remove_prefix(comma == std::string_view::npos ? f[4].size() : comma + 1);
    }
  }
  r.usable = true;
  return r;
}

// The lines of index text `data`, each parsed and given to `fn`; a last
// line without its newline is left. Returns the bytes and lines consumed.
template <typename F>
std::pair<size_t, size_t> ForEachIndexLine(std::string_view data, F&& fn) {
  size_t used = 0, lines = 0;
  while (used < data.size()) {
    size_t nl = data.find('\n', used);
    if (nl == std::string_view::npos) break;  // torn, or still being written
    fn(ParseIndexLine(data.substr(used, nl - used)));
    used = nl + 1;
    ++lines;
  }
  return {used, lines};
}

// Reads `len` bytes of `fd` from `offset`, at most kMaxIndexBytes.
std::string ReadIndexBytes(int fd, off_t offset, off_t len) {
  std::string data(static_cast<size_t>(std::max<off_t>(0, len)), '\0');
  ssize_t n = data.empty() ? 0 : ::pread(fd, data.data(), data.size(), offset);
  data.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return data;
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
      spare_path_(SpareIn(dir_, "task")),
      local_(options.local) {
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
  const bool was_releasing = e.present && ReleasesDependents(e.task.status);
  if (!e.present) {
    ++live_;
    LinkLocked(id, task.blocked_by);
  } else if (e.task.blocked_by != task.blocked_by) {
    UnlinkLocked(id, e.task.blocked_by);
    LinkLocked(id, task.blocked_by);
  }
  e.present = true;
  e.full = full;
  e.task = std::move(task);
  e.stamp = stamp;
  ReadyLocked(id);
  if (ReleasesDependents(e.task.status) != was_releasing) DependentsReadyLocked(id);
}

void Board::EraseLocked(int64_t id) {
  Entry* e = FindLocked(id);
  if (e == nullptr) return;
  const bool was_releasing = ReleasesDependents(e->task.status);
  UnlinkLocked(id, e->task.blocked_by);
  *e = Entry{};
  --live_;
  ready_open_.erase(id);
  ready_assigned_.erase(id);
  if (was_releasing) DependentsReadyLocked(id);  // a blocker gone holds them back
}

void Board::ReadyLocked(int64_t id) {
  const Entry* e = FindLocked(id);
  const bool ready =
      e != nullptr && e->task.status == TaskStatus::kPending && !BlockedLocked(e->task);
  const bool owned = ready && !e->task.owner.empty();
  if (ready && !owned) {
    ready_open_.insert(id);
  } else {
    ready_open_.erase(id);
  }
  if (owned) {
    ready_assigned_.insert(id);
  } else {
    ready_assigned_.erase(id);
  }
}

void Board::DependentsReadyLocked(int64_t id) {
  auto it = dependents_.find(id);
  if (it == dependents_.end()) return;
  for (int64_t d : it->second) ReadyLocked(d);
}

void Board::LinkLocked(int64_t id, const std::vector<int64_t>& blocked_by) {
  for (int64_t b : blocked_by) dependents_[b].push_back(id);
}

void Board::UnlinkLocked(int64_t id, const std::vector<int64_t>& blocked_by) {
  // One entry per listing: a blocker listed twice was linked twice.
  for (int64_t b : blocked_by) {
    auto it = dependents_.find(b);
    if (it == dependents_.end()) continue;
    auto& ds = it->second;
    if (auto d = std::find(ds.begin(), ds.end(), id); d != ds.end()) {
      *d = ds.back();
      ds.pop_back();
    }
    if (ds.empty()) dependents_.erase(it);
  }
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

Status Board::OpenIndexLocked(struct stat* st) {
  // Whether the descriptor is still the file at the path: one stat (the
  // file a descriptor was opened on never changes).
  struct stat at {};
  if (index_fd_.valid() && ::stat(index_path_.c_str(), &at) == 0 && at.st_ino == index_fd_ino_ &&
      at.st_dev == index_fd_dev_) {
    if (st != nullptr) *st = at;
    return Status::Ok();
  }
  index_fd_.reset(::open(index_path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!index_fd_.valid()) return Status::FromErrno("open " + index_path_.string(), errno);
  if (::fstat(index_fd_.get(), &at) != 0) {
    int err = errno;
    index_fd_.reset();
    return Status::FromErrno("stat " + index_path_.string(), err);
  }
  index_fd_dev_ = at.st_dev;
  index_fd_ino_ = at.st_ino;
  if (st != nullptr) *st = at;
  return Status::Ok();
}

Status Board::AppendIndexLocked(const Entry& e) {
  MATES_RETURN_IF_ERROR(OpenIndexLocked());
  struct stat before {};
  const bool sized = ::fstat(index_fd_.get(), &before) == 0;
  if (Status s = WriteAll(index_fd_.get(), IndexLine(e.task, e.stamp.ino), index_path_.c_str()); !s.ok()) {
    // Part of a line would run into the next one: cut back to the last
    // whole line (cutting needs no room).
    if (sized) (void)!::ftruncate(index_fd_.get(), before.st_size);
    return s;
  }
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
  // Never had one: nothing to read. Gone since, or not to be looked at: a
  // cold load (which says why).
  struct stat st {};
  if (::stat(index_path_.c_str(), &st) != 0) return errno == ENOENT && index_ino_ == 0;
  // Not the file the descriptor is on (or none open yet): open the one there.
  if (!index_fd_.valid() || st.st_ino != index_fd_ino_ || st.st_dev != index_fd_dev_) {
    if (!OpenIndexLocked(&st).ok()) return false;
  }
  int fd = index_fd_.get();
  if (st.st_ino != index_ino_ || st.st_size < index_offset_) return false;  // compacted
  if (st.st_size == index_offset_) return true;
  if (st.st_size - index_offset_ > static_cast<off_t>(kMaxIndexBytes)) return false;  // start over, cold
  std::string data = ReadIndexBytes(fd, index_offset_, st.st_size - index_offset_);
  auto [used, lines] = ForEachIndexLine(data, [&](IndexRecord&& r) {
    if (r.id == 0) return;
    if (!r.usable) {
      ReloadLocked(r.id, /*force=*/true);
      explained->insert(r.id);
      return;
    }
    Entry* e = FindLocked(r.id);
    // Our own write: the entry stays full, so it is not "explained" and a
    // change after it (by someone else) is still checked with a stat.
    if (e != nullptr && e->full && e->stamp.ino == r.ino) return;
    explained->insert(r.id);
    FileStamp stamp;
    stamp.ino = r.ino;
    PutLocked(TaskFromRecord(std::move(r)), stamp, /*full=*/false);
  });
  index_offset_ += static_cast<off_t>(used);
  index_lines_ += lines;
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
  ready_open_.clear();
  ready_assigned_.clear();
  dependents_.clear();
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
    // An index grown past the bound (edited by hand) is not read: every
    // file is read instead, and the index written anew.
    if (fd.valid() && ::fstat(fd.get(), &st) == 0 && st.st_size <= static_cast<off_t>(kMaxIndexBytes)) {
      index_ino_ = st.st_ino;
      std::string data = ReadIndexBytes(fd.get(), 0, st.st_size);
      auto [used, lines] = ForEachIndexLine(data, [&](IndexRecord&& r) {
        if (r.id == 0) return;
        if (index.size() <= static_cast<size_t>(r.id)) index.resize(static_cast<size_t>(r.id) + 1);
        if (index[r.id].id == 0) ++indexed;
        index[r.id] = std::move(r);
      });
      index_offset_ = static_cast<off_t>(used);
      index_lines_ = lines;
    }
  }
  // What is on disk: readdir() gives each file's inode without a stat.
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return Status::FromErrno("open " + dir_.string(), errno);
  std::vector<std::pair<int64_t, ino_t>> files;
  while (struct dirent* e = ::readdir(d)) {
    int64_t id = TaskIdFromFileName(e->d_name);
    if (id > 0) files.emplace_back(id, e->d_ino);  // ids past kMaxTaskId read as 0
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
    if (InotifyDrained(n, sizeof buf)) break;
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

Status Board::WriteLocked(Task& task, bool touch) {
  if (touch) task.updated_at = WallSeconds();
  NoteHistory(&task);
  fs::path path = dir_ / TaskFileName(task.id);
  MATES_RETURN_IF_ERROR(ReplaceFileViaSpare(path, DumpJsonPretty(TaskToJson(task)), spare_path_));
  struct stat st {};
  FileStamp stamp = ::stat(path.c_str(), &st) == 0 ? StampOf(st) : FileStamp{};
  PutLocked(task, stamp, /*full=*/true);
  // The file is the task; the index only spares readers a look at it. One
  // that cannot be written (a full disk) is said, and the write stands:
  // readers find the file newer than its line and read it.
  if (Status s = AppendIndexLocked(tasks_[task.id]); !s.ok()) {
    LogWarning("task " + TaskRef(task.id) + " is written; its line in " + index_path_.string() +
               " is not: " + s.message());
  }
  if (local_ != nullptr) local_->NotifyLocal(dir_, TaskFileName(task.id));
  return Status::Ok();
}


}  // namespace mates
