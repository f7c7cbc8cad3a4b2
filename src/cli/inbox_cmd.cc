// mates inbox --team T [--store URL] NAME [--peek] [--wait [S]] [--json]
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
#include "store/mailbox.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "store/watcher.h"

namespace mates::cli {
namespace {

struct InboxArgs {
  std::string team;
  std::string store;
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

int Inbox(Globals& g, InboxArgs a, bool wait_given) {
  double wait_s = -1;  // forever
  if (wait_given && !a.wait.empty()) {
    // `--wait NAME`: CLI11 took the name as the seconds; give it back.
    if (!IsNumber(a.wait[0], &wait_s)) {
      if (!a.name.empty()) return Usage("--wait takes seconds, got '" + a.wait[0] + "'");
      a.name = a.wait[0];
      wait_s = -1;
    } else if (Status bad = CheckSeconds("--wait", wait_s, 0, true); !bad.ok()) {
      return Fail(bad);
    }
  }
  if (a.name.empty()) return Usage("whose inbox? give NAME");
  Status s = ValidateName("member name", a.name);
  if (!s.ok()) return Fail(s);
  auto pg = OpenChosenStore(a.store);
  if (!pg.ok()) return Fail(pg.status());
  std::optional<Workspace> ws;
  if (!*pg) ws = g.ws();
  auto team = *pg ? (*pg)->LoadTeam(a.team) : Roster(*ws).Load(a.team);
  if (!team.ok()) return Fail(team.status());
  // `user` is no member, but members write back to it (DESIGN §11).
  if (a.name != kUserName && team->Find(a.name) == nullptr) {
    return Fail(Status::NotFound("'" + a.name + "' is not a member of team '" + a.team + "'"));
  }
  std::optional<Mailbox> box;
  if (ws) box.emplace(ws->TeamDir(a.team), a.name);
  auto peek = [&] { return box ? box->Peek() : (*pg)->Peek(a.team, a.name); };
  if (!wait_given) {
    auto msgs = a.peek ? peek() : box ? box->Drain() : (*pg)->Drain(a.team, a.name);
    if (!msgs.ok()) return Fail(msgs.status());
    Print(*msgs, a.json);
    return 0;
  }
  // Takes what the inbox holds: printed, then committed (a reader killed
  // in between leaves it for the next). `*again`: it may hold more.
  auto take = [&](bool* again) -> Result<bool> {
    *again = false;
    if (box) {
      MATES_ASSIGN_OR_RETURN(Mailbox::Batch batch, box->BeginDrain());
      Print(batch.messages, a.json);
      MATES_RETURN_IF_ERROR(box->Commit(batch));
      *again = batch.messages.empty() && batch.redelivery;
      return !batch.messages.empty();
    }
    MATES_ASSIGN_OR_RETURN(pg::Store::Batch batch, (*pg)->BeginDrain(a.team, a.name));
    Print(batch.messages, a.json);
    MATES_RETURN_IF_ERROR((*pg)->Commit(batch));
    return !batch.messages.empty();
  };
  // Subscribe before the first look so that nothing falls in between.
  auto waker = std::make_shared<Waker>();
  Watcher::Subscription file_sub;
  pg::Listener::Subscription pg_sub;
  if (box) {
    auto sub = Watcher::Default().Subscribe(ws->TeamDir(a.team), Workspace::InboxFileName(a.name), waker);
    if (!sub.ok()) return Fail(sub.status());
    file_sub = std::move(*sub);
  } else {
    auto sub = (*pg)->listener().Subscribe(pg::InboxKey(a.team, a.name), waker);
    if (!sub.ok()) return Fail(sub.status());
    pg_sub = std::move(*sub);
  }
  Deadline deadline = DeadlineIn(wait_s);
  bool said_waiting = false;
  for (;;) {
    uint64_t seen = waker->generation();
    if (a.peek) {
      auto msgs = peek();
      if (!msgs.ok()) return Fail(msgs.status());
      if (!msgs->empty()) {
        Print(*msgs, a.json);
        return 0;
      }
    } else {
      bool again = false;
      auto taken = take(&again);
      if (!taken.ok()) return Fail(taken.status());
      if (*taken) return 0;
      if (again) continue;
    }
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
  inbox->add_option("--team", a->team, "Team name")->envname("MATES_TEAM")->required();
  AddStoreOption(inbox, a->store);
  inbox->add_option("NAME", a->name, "Whose inbox");
  inbox->add_flag("--peek", a->peek, "Show without taking the messages away");
  auto* wait = inbox->add_option("--wait", a->wait,
                                 "Block until a message comes (at most S seconds)")
                   ->expected(0, 1);
  inbox->add_flag("--json", a->json, "One JSON object per line");
  inbox->callback([&g, a, wait] {
    bool wait_given = wait->count() > 0;
    g.action = [&g, a, wait_given] { return Inbox(g, *a, wait_given); };
  });
}

}  // namespace mates::cli
