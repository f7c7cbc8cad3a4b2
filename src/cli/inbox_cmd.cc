// mates inbox --team T [--store URL] [NAME] [--peek] [--wait [S]] [--json]
// On the file store (the default) or a PostgreSQL one (DESIGN §13): a
// drain that is not committed (the process dies first) leaves its messages
// for the next, on both.
#include <charconv>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "cli/store_choice.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/names.h"
#include "store/messenger.h"
#include "store/team_store.h"

namespace mates::cli {
namespace {

struct InboxArgs {
  std::string name;
  bool peek = false;
  std::vector<std::string> wait;  // [] = flag given without seconds
  bool json = false;
};

bool IsNumber(const std::string& s, double* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

void Print(const std::vector<Message>& msgs, bool json) {
  for (const auto& m : msgs) {
    if (json) {
      std::cout << DumpJson(MessageToJson(m)) << "\n";
    } else {
      std::cout << FormatMessage(m) << "\n";
    }
  }
  std::cout.flush();
}

// Which inbox is read (`a.name`: the one given, the sandboxed agent's, else
// the person's) and how long a wait lasts (`*wait_s`, -1 = forever).
Status ChooseReader(InboxArgs& a, bool wait_given, double* wait_s) {
  *wait_s = -1;
  // (A --wait without seconds comes as nothing, or as "".)
  if (wait_given && !a.wait.empty() && !a.wait[0].empty()) {
    // `--wait NAME`: CLI11 took the name as the seconds; give it back.
    if (!IsNumber(a.wait[0], wait_s)) {
      if (!a.name.empty()) return Status::InvalidArgument("--wait takes seconds, got '" + a.wait[0] + "'");
      a.name = a.wait[0];
      *wait_s = -1;
    } else {
      MATES_RETURN_IF_ERROR(CheckSeconds("--wait", *wait_s, 0, true));
    }
  }
  if (a.name.empty() && !SandboxedAgent().empty()) a.name = SandboxedAgent();
  // The person's own by default: what the team writes back to `user`.
  if (a.name.empty()) a.name = kUserName;
  if (std::string refused = RefusedIdentity("inbox", a.name); !refused.empty()) {
    return Status::InvalidArgument(refused);
  }
  return ValidateName("member name", a.name);
}

int ReadInbox(Globals& g, InboxArgs a, bool wait_given) {
  double wait_s = -1;
  if (Status s = ChooseReader(a, wait_given, &wait_s); !s.ok()) return Fail(s);
  auto opened = OpenChosenStore(g, g.store, g.ws());
  if (!opened.ok()) return Fail(opened.status());
  std::unique_ptr<TeamStore> store = std::move(*opened);
  auto team = store->LoadTeam(g.team);
  if (!team.ok()) return Fail(team.status());
  // `user` is no member, but members write back to it (DESIGN §11).
  if (a.name != kUserName && team->Find(a.name) == nullptr) {
    return Fail(Status::NotFound("'" + a.name + "' is not a member of team '" + g.team + "'"));
  }
  std::unique_ptr<Inbox> box = store->InboxOf(g.team, a.name);
  // Takes what the inbox holds: printed, then committed (a reader killed
  // in between leaves it for the next). `*again`: it may hold more.
  auto take = [&](bool* again) -> Result<bool> {
    MATES_ASSIGN_OR_RETURN(Inbox::Taken taken, box->Take([&](const std::vector<Message>& msgs) {
      Print(msgs, a.json);
      return true;
    }));
    *again = taken.more;
    return !taken.messages.empty();
  };
  if (!wait_given) {
    if (a.peek) {
      auto msgs = box->Peek();
      if (!msgs.ok()) return Fail(msgs.status());
      Print(*msgs, a.json);
      return 0;
    }
    // What a dead reader left comes first, the inbox after it.
    for (bool again = true; again;) {
      auto taken = take(&again);
      if (!taken.ok()) return Fail(taken.status());
    }
    return 0;
  }
  // Subscribed before the first look so that nothing falls in between.
  auto waker = std::make_shared<Waker>();
  auto watch = box->WatchWith(waker);
  if (!watch.ok()) return Fail(watch.status());
  Deadline deadline = DeadlineIn(wait_s);
  bool said_waiting = false, said_lost = false;
  // A store that cannot be reached is waited out (said once); any other
  // failure ends the wait.
  auto lost = [&](const Status& s, uint64_t seen) {
    if (s.code() == StatusCode::kUnavailable && !said_lost) {
      LogWarning("inbox: " + s.message() + ": waiting for the store to come back");
      said_lost = true;
    }
    return WaitOutOutage(s, *waker, seen, deadline);
  };
  for (;;) {
    uint64_t seen = waker->generation();
    if (a.peek) {
      auto msgs = box->Peek();
      if (!msgs.ok()) {
        if (lost(msgs.status(), seen)) continue;
        return Fail(msgs.status());
      }
      if (!msgs->empty()) {
        Print(*msgs, a.json);
        return 0;
      }
    } else {
      bool again = false;
      auto taken = take(&again);
      if (!taken.ok()) {
        if (lost(taken.status(), seen)) continue;
        return Fail(taken.status());
      }
      if (*taken) return 0;
      if (again) continue;  // nothing, but the inbox itself may hold some
    }
    said_lost = false;
    if (!said_waiting) {
      LogDebug("inbox: waiting for a message to " + a.name);
      said_waiting = true;
    }
    if (waker->WaitChange(seen, deadline) == seen && Expired(deadline)) {
      return Fail(Status::Timeout("no message for " + a.name + " within " +
                                  std::to_string(static_cast<long>(wait_s)) + " s"));
    }
  }
}

}  // namespace

void AddInboxCommand(CLI::App& app, Globals& g) {
  auto a = std::make_shared<InboxArgs>();
  CLI::App* inbox = app.add_subcommand("inbox", "Read (drain) or peek at a member's inbox");
  AddTeamOption(inbox, g);
  AddStoreOption(inbox, g);
  inbox->add_option("NAME", a->name, "Whose inbox (default: user, yours)");
  inbox->add_flag("--peek", a->peek, "Show without taking the messages away");
  auto* wait = inbox->add_option("--wait", a->wait,
                                 "Block until a message comes (at most S seconds)")
                   ->expected(0, 1);
  inbox->add_flag("--json", a->json, "One JSON object per line");
  inbox->callback([&g, a, wait] {
    bool wait_given = wait->count() > 0;
    g.action = [&g, a, wait_given] { return ReadInbox(g, *a, wait_given); };
  });
}

}  // namespace mates::cli
