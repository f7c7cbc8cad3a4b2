#include "store/claim_line.h"

#include <algorithm>
#include <map>
#include <vector>

#include "core/log.h"

namespace mates {

Result<std::shared_ptr<ClaimLine>> ClaimLine::Create(std::shared_ptr<Board> board, Watcher& watcher) {
  const fs::path dir = board->dir();
  std::shared_ptr<ClaimLine> line(
      new ClaimLine([board = std::move(board)](int64_t id, const TaskPatch& patch, const Caller& caller) {
        return board->Update(id, patch, caller);
      }));
  std::weak_ptr<ClaimLine> weak = line;
  MATES_ASSIGN_OR_RETURN(line->sub_, watcher.Subscribe(dir, "*.json", [weak] {
    if (auto l = weak.lock()) l->OnChange();
  }));
  return line;
}

std::shared_ptr<ClaimLine> ClaimLine::Told(Update update) {
  return std::shared_ptr<ClaimLine>(new ClaimLine(std::move(update)));
}

ClaimLine::Place ClaimLine::Join(const std::string& name, std::shared_ptr<Waker> waker, std::atomic<bool>* busy) {
  std::lock_guard<std::mutex> lock(mu_);
  Waiter w;
  w.name = name;
  w.waker = std::move(waker);
  w.busy = busy;
  waiters_.push_back(std::move(w));
  return Place(shared_from_this(), std::prev(waiters_.end()));
}

size_t ClaimLine::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_.size();
}

size_t ClaimLine::looking() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count_if(waiters_.begin(), waiters_.end(), [](const Waiter& w) { return w.looking; }));
}

void ClaimLine::Wakes::Notify() {
  for (const auto& w : wakers_) w->Notify();
  wakers_.clear();
}

void ClaimLine::WakeAll() {
  Wakes wakes;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : waiters_) {
    w.looking = true;
    ++w.bumps;
    wakes.Add(w.waker);
  }
}

void ClaimLine::OnChange() {
  Wakes wakes;
  std::lock_guard<std::mutex> lock(mu_);
  OnChangeLocked(&wakes);
}

void ClaimLine::Changed(int64_t wanted) {
  Wakes wakes;
  std::lock_guard<std::mutex> lock(mu_);
  OnChangeLocked(&wakes);
  if (wanted > 1 && handing_ == 0) WakeForLocked(wanted, {}, waiters_.end(), &wakes);
}

void ClaimLine::OnChangeLocked(Wakes* wakes) {
  if (waiters_.empty()) return;
  // A change seen while tasks are being handed out was made before the
  // board lock the hand-out holds (or is one of its claims): the hand-out
  // looked after it.
  if (handing_ > 0) return;
  // One already looking looks again (changes coming together cost one
  // more look, not one each); else the one longest without a look, one
  // with a task coming to it last.
  auto pending = [](const Waiter& w) { return w.reserved || w.handed.has_value(); };
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (it->looking && !pending(*it)) {
      ++it->bumps;
      wakes->Add(it->waker);
      return;
    }
  }
  auto it = std::find_if(waiters_.begin(), waiters_.end(), [&](const Waiter& w) { return !pending(w); });
  WakeLocked(it != waiters_.end() ? it : waiters_.begin(), wakes);
}

void ClaimLine::WakeLocked(std::list<Waiter>::iterator it, Wakes* wakes) {
  it->looking = true;
  ++it->bumps;
  wakes->Add(it->waker);
  waiters_.splice(waiters_.end(), waiters_, it);  // iterators stay valid
}

std::vector<std::string> ClaimLine::Reserve(int64_t unowned, const std::vector<std::string>& assigned) {
  std::lock_guard<std::mutex> lock(mu_);
  // Free: not in a look of its own (it would claim a second task), not
  // already given one. One woken to look but not yet looking is free: the
  // task saves it the look.
  auto free = [](const Waiter& w) { return !w.in_look && !w.reserved && !w.handed; };
  std::vector<std::list<Waiter>::iterator> picked;
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (free(*it) && std::find(assigned.begin(), assigned.end(), it->name) != assigned.end()) picked.push_back(it);
  }
  for (auto it = waiters_.begin(); it != waiters_.end() && unowned > 0; ++it) {
    if (free(*it) && std::find(picked.begin(), picked.end(), it) == picked.end()) {
      picked.push_back(it);
      --unowned;
    }
  }
  std::vector<std::string> names;
  handing_ += picked.size();
  for (auto it : picked) {
    it->reserved = true;
    it->reserved_at = it->bumps;
    if (it->busy != nullptr) it->busy->store(true);
    names.push_back(it->name);
  }
  return names;
}

void ClaimLine::Hand(const std::string& name, std::optional<Task> task, bool assigned) {
  Wakes wakes;
  std::unique_lock<std::mutex> lock(mu_);
  auto it = std::find_if(waiters_.begin(), waiters_.end(), [&](const Waiter& w) { return w.reserved && w.name == name; });
  if (it == waiters_.end()) return;  // (a reserved waiter cannot leave)
  it->reserved = false;
  --handing_;
  if (task) {
    // (Set or cleared at every hand-out: what a taken task left here is
    // overwritten before that id can be given back again.)
    if (assigned) {
      handed_assigned_.insert(task->id);
    } else {
      handed_assigned_.erase(task->id);
    }
    // The hand-out looked at the board after every change passed to it so
    // far: those are covered, and it has no look to make.
    it->handed = std::move(task);
    it->covered = std::max(it->covered, it->reserved_at);
    if (it->bumps == it->reserved_at) it->looking = false;
    waiters_.splice(waiters_.end(), waiters_, it);
  } else if (it->busy != nullptr) {
    it->busy->store(false);
  }
  wakes.Add(it->waker);
  lock.unlock();
  reservations_.notify_all();
}

void ClaimLine::GiveBack(const std::string& name, const Task& task) {
  bool assigned = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    assigned = handed_assigned_.erase(task.id) > 0;
  }
  TaskPatch back;
  back.status = TaskStatus::kPending;
  // A task the lead assigned to `name`, handed to it while its own look
  // had already found another, stays `name`'s: given back unowned, another
  // claimer took it.
  back.owner = assigned ? name : "";
  auto r = update_(task.id, back, Caller{name, false});
  if (!r.ok()) {
    LogWarning(name + ": giving task #" + std::to_string(task.id) + " back to the board: " + r.status().message());
  }
}

void ClaimLine::AwaitReservationLocked(std::unique_lock<std::mutex>& lock, std::list<Waiter>::iterator it) {
  reservations_.wait(lock, [&] { return !it->reserved; });
}

std::optional<Task> ClaimLine::Leave(std::list<Waiter>::iterator it) {
  Wakes wakes;
  std::unique_lock<std::mutex> lock(mu_);
  AwaitReservationLocked(lock, it);
  return LeaveLocked(it, &wakes);
}

std::optional<Task> ClaimLine::LeaveLocked(std::list<Waiter>::iterator it, Wakes* wakes) {
  bool owed = it->bumps > it->covered;
  std::optional<Task> handed = std::move(it->handed);
  waiters_.erase(it);
  // A change passed to it and not yet looked at goes to another.
  if (owed) OnChangeLocked(wakes);
  return handed;
}

ClaimLine::Place& ClaimLine::Place::operator=(Place&& o) noexcept {
  if (this != &o) {
    LeaveGivingBack();
    line_ = std::move(o.line_);
    it_ = o.it_;
    o.line_.reset();
  }
  return *this;
}

std::optional<Task> ClaimLine::Place::Leave() {
  if (!line_) return std::nullopt;
  auto line = std::move(line_);
  line_.reset();
  return line->Leave(it_);
}

ClaimLine::Place::~Place() { LeaveGivingBack(); }

void ClaimLine::Place::LeaveGivingBack() {
  if (!line_) return;
  auto line = line_;
  auto name = it_->name;
  // Whoever held the place did not ask for what was handed to it: it goes
  // back to the board rather than stay in progress under a claimer gone.
  if (auto task = Leave()) line->GiveBack(name, *task);
}

ClaimLine::Place::Look ClaimLine::Place::BeginLook() {
  ClaimLine& l = *line_;
  Wakes wakes;
  std::unique_lock<std::mutex> lock(l.mu_);
  l.AwaitReservationLocked(lock, it_);
  Look look;
  if (it_->handed) {
    // Out of the line with it, in the same step: no second task can come.
    l.handed_assigned_.erase(it_->handed->id);
    look.handed = l.LeaveLocked(it_, &wakes);
    lock.unlock();
    line_.reset();
    return look;
  }
  it_->in_look = true;
  look.bumps = it_->bumps;
  look.others = static_cast<int64_t>(l.waiters_.size()) - 1;
  return look;
}

void ClaimLine::Place::Looked(uint64_t bumps, const Board::ClaimOutlook& outlook) {
  ClaimLine& l = *line_;
  Wakes wakes;
  std::lock_guard<std::mutex> lock(l.mu_);
  Waiter& me = *it_;
  me.in_look = false;
  me.covered = std::max(me.covered, bumps);
  if (me.bumps == bumps) me.looking = false;  // nothing came while it looked
  l.WakeForLocked(outlook.unowned, outlook.assigned_to, it_, &wakes);
}

void ClaimLine::WakeForLocked(int64_t unowned, const std::vector<std::string>& assigned,
                              std::list<Waiter>::iterator except, Wakes* wakes) {
  int64_t want = unowned;
  std::vector<std::list<Waiter>::iterator> wake;
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (it != except && it->looking) --want;
  }
  for (auto it = waiters_.begin(); it != waiters_.end() && want > 0; ++it) {
    if (it != except && !it->looking && !it->reserved && !it->handed) {
      wake.push_back(it);
      --want;
    }
  }
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (it == except || it->looking || it->reserved || it->handed) continue;
    if (std::find(assigned.begin(), assigned.end(), it->name) != assigned.end() &&
        std::find(wake.begin(), wake.end(), it) == wake.end()) {
      wake.push_back(it);
    }
  }
  for (auto it : wake) WakeLocked(it, wakes);
}

}  // namespace mates
