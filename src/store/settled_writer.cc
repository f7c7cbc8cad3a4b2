#include "store/settled_writer.h"

#include "core/files.h"
#include "core/guarded.h"
#include "core/log.h"

namespace mates {

void SettledWriter::Post(const std::shared_ptr<Slot>& slot, std::function<std::string()> document) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    slot->latest = std::move(document);
    if (!slot->queued) {
      if (queue_.empty()) burst_start_ = SteadyClock::now();
      slot->queued = true;
      queue_.push_back(slot);
    }
    if (!thread_.joinable()) {
      thread_ = std::thread([this] {
        NameThisThread("mates-activity");
        RunGuarded("the status file writer", [this] { Main(); });
      });
    }
    wake = waiting_for_work_;
  }
  if (wake) work_cv_.notify_one();
}

void SettledWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  ++flushing_;
  work_cv_.notify_one();  // a settle under way ends
  idle_cv_.wait(lock, [this] { return queue_.empty() && writing_ == 0; });
  --flushing_;
}

SettledWriter::~SettledWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void SettledWriter::Main() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (queue_.empty()) {
      if (stop_) return;  // all written
      waiting_for_work_ = true;
      work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      waiting_for_work_ = false;
      continue;
    }
    // A burst, written kSettle after its first change; posts meanwhile
    // join it (they do not wake the writer: waiting_for_work_ is false).
    work_cv_.wait_until(lock, burst_start_ + kSettle, [this] { return stop_ || flushing_ > 0; });
    while (!queue_.empty()) WriteOne(lock);
    idle_cv_.notify_all();
  }
}

void SettledWriter::WriteOne(std::unique_lock<std::mutex>& lock) {
  std::shared_ptr<Slot> slot = std::move(queue_.front());
  queue_.pop_front();
  slot->queued = false;
  std::function<std::string()> latest = slot->latest;
  ++writing_;
  lock.unlock();
  // Whatever throws here (the store's copy, say) must not end the writer:
  // every later change of every file, and every flush, depend on it.
  RunGuarded("writing " + slot->what, [&] {
    std::string doc = latest();
    Status s = ReplaceFileViaSpare(slot->path, doc, slot->spare);
    // A team archived or deleted under its agents: nothing to show any more.
    if (!s.ok() && s.code() != StatusCode::kNotFound && fs::exists(slot->path.parent_path())) {
      LogWarning(slot->what + ": " + s.message());
    }
    if (slot->also) slot->also(doc);
  });
  lock.lock();
  --writing_;
}

}  // namespace mates
