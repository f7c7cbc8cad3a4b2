// See adopter.h.
#include "team/adopter.h"

#include "core/clock.h"
#include "core/guarded.h"

namespace mates::team {

Adopter::Adopter(TeamStore& store, std::function<std::string()> team,
                 std::function<Result<std::vector<std::string>>()> resume)
    : store_(store), team_(std::move(team)), resume_(std::move(resume)) {}

Adopter::~Adopter() { Stop(); }

void Adopter::Start(double every_s, std::function<void(const std::vector<std::string>&)> said) {
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

void Adopter::Main(double every_s, const std::function<void(const std::vector<std::string>&)>& said) {
  std::string watched;
  Result<std::unique_ptr<Hold>> roster = std::unique_ptr<Hold>();
  while (!stop_.load()) {
    const std::string team = team_();
    if (team != watched) {
      roster = store_.WatchRoster(team, waker_);
      watched = team;
    }
    uint64_t seen = waker_->generation();
    auto resumed = resume_();
    if (resumed.ok() && !resumed->empty() && said) said(*resumed);
    waker_->WaitChange(seen, DeadlineIn(every_s));
  }
}

}  // namespace mates::team
