#include "store/claim_line.h"

#include <algorithm>
#include <map>
#include <vector>

namespace mates {

Result<std::shared_ptr<ClaimLine>> ClaimLine::Create(const fs::path& dir) {
  std::shared_ptr<ClaimLine> line(new ClaimLine());
  std::weak_ptr<ClaimLine> weak = line;
  MATES_ASSIGN_OR_RETURN(line->sub_, Watcher::Default().Subscribe(dir, "*.json", [weak] {
    if (auto l = weak.lock()) l->OnChange();
  }));
  return line;
}

Result<std::shared_ptr<ClaimLine>> SharedClaimLine(const fs::path& dir) {
  static std::mutex mu;
  static auto* lines = new std::map<std::string, std::weak_ptr<ClaimLine>>();  // guarded by mu
  std::string key = dir.lexically_normal().string();
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*lines)[key];
  if (auto line = slot.lock()) return line;
  MATES_ASSIGN_OR_RETURN(auto line, ClaimLine::Create(dir));
  slot = line;
  return line;
}

ClaimLine::Place ClaimLine::Join(const std::string& name, std::shared_ptr<Waker> waker) {
  std::lock_guard<std::mutex> lock(mu_);
  waiters_.push_back(Waiter{name, std::move(waker)});
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

void ClaimLine::WakeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& w : waiters_) {
    w.looking = true;
    ++w.bumps;
    w.waker->Notify();
  }
}

void ClaimLine::OnChange() {
  std::lock_guard<std::mutex> lock(mu_);
  OnChangeLocked();
}

void ClaimLine::OnChangeLocked() {
  if (waiters_.empty()) return;
  // One already looking looks again (changes coming together cost one
  // more look, not one each); else the one longest without a look.
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (it->looking) {
      ++it->bumps;
      it->waker->Notify();
      return;
    }
  }
  WakeLocked(waiters_.begin());
}

void ClaimLine::WakeLocked(std::list<Waiter>::iterator it) {
  it->looking = true;
  ++it->bumps;
  it->waker->Notify();
  waiters_.splice(waiters_.end(), waiters_, it);  // iterators stay valid
}

void ClaimLine::Leave(std::list<Waiter>::iterator it) {
  std::lock_guard<std::mutex> lock(mu_);
  bool owed = it->bumps > it->covered;
  waiters_.erase(it);
  // A change passed to it and not yet looked at goes to another.
  if (owed) OnChangeLocked();
}

ClaimLine::Place& ClaimLine::Place::operator=(Place&& o) noexcept {
  if (this != &o) {
    if (line_) line_->Leave(it_);
    line_ = std::move(o.line_);
    it_ = o.it_;
    o.line_.reset();
  }
  return *this;
}

ClaimLine::Place::~Place() {
  if (line_) line_->Leave(it_);
}

uint64_t ClaimLine::Place::Bumps() const {
  std::lock_guard<std::mutex> lock(line_->mu_);
  return it_->bumps;
}

void ClaimLine::Place::Looked(uint64_t bumps, const Board::ClaimOutlook& outlook) {
  ClaimLine& l = *line_;
  std::lock_guard<std::mutex> lock(l.mu_);
  Waiter& me = *it_;
  me.covered = std::max(me.covered, bumps);
  if (me.bumps == bumps) me.looking = false;  // nothing came while it looked
  // As many more as there are tasks left, counting those already looking.
  int64_t want = outlook.unowned;
  std::vector<std::list<Waiter>::iterator> wake;
  for (auto it = l.waiters_.begin(); it != l.waiters_.end(); ++it) {
    if (it != it_ && it->looking) --want;
  }
  for (auto it = l.waiters_.begin(); it != l.waiters_.end() && want > 0; ++it) {
    if (it != it_ && !it->looking) {
      wake.push_back(it);
      --want;
    }
  }
  for (auto it = l.waiters_.begin(); it != l.waiters_.end(); ++it) {
    if (it == it_ || it->looking) continue;
    if (std::find(outlook.assigned_to.begin(), outlook.assigned_to.end(), it->name) != outlook.assigned_to.end() &&
        std::find(wake.begin(), wake.end(), it) == wake.end()) {
      wake.push_back(it);
    }
  }
  for (auto it : wake) l.WakeLocked(it);
}

}  // namespace mates
