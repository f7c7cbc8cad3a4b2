// See adopter.h.
#include "team/adopter.h"

#include "core/clock.h"
#include "core/guarded.h"

namespace mates::team {

Adopter::Adopter(TeamStore& store, std::function<std::string()> team, std::function<std::vector<std::string>()> look)
    : store_(store), team_(std::move(team)), look_(std::move(look)) {}

Adopter::~Adopter() { Stop(); }

void Adopter::Start(double every_s, std::function<void(const std::string&)> said) {
  if (thread_.joinable()) return;
  thread_ = std::thread([this, every_s, said = std::move(said)] {
    NameThisThread("mates-adopter");
    RunGuarded("adopting teammates", [&] { Main(every_s, said); });
  });
}

void Adopter::Interrupt() {
  stop_.store(true);
  waker_->Notify();
}

void Adopter::Stop() {
  Interrupt();
  if (thread_.joinable()) thread_.join();
}

void Adopter::Main(double every_s, const std::function<void(const std::string&)>& said) {
  std::string watched;
  Result<std::unique_ptr<Hold>> roster = std::unique_ptr<Hold>();
  Result<std::unique_ptr<Hold>> board = std::unique_ptr<Hold>();
  while (!stop_.load()) {
    const std::string team = team_();
    if (team != watched) {
      roster = store_.WatchRoster(team, waker_);
      board = store_.WatchBoard(team, waker_);
      watched = team;
    }
    uint64_t seen = waker_->generation();
    for (const auto& line : look_()) {
      if (said) said(line);
    }
    waker_->WaitChange(seen, DeadlineIn(every_s));
  }
}

}  // namespace mates::team
