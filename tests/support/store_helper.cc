// mates_store_helper: one process of a multi-process store test or benchmark.
//
//   write DIR MEMBER COUNT TAG        append COUNT messages, ids TAG-0…
//   drain DIR MEMBER SINK EXPECT      drain into SINK (JSONL) until it holds
//                                     EXPECT distinct ids; safe to kill -9 at
//                                     any instant and start again
//   host URL AGENT                    hold AGENT's liveness lock (PostgreSQL), print "hosting", wait
//   hold-lock PATH RANGE              take the lock (a folder: the board's), print "locked", wait
//   claim-loop TASKDIR OWNER OUT      ClaimNext until nothing is claimable,
//                                     appending each id to OUT
//   pingpong STORE WS TEAM ME PEER ROUNDS ping|pong
//                                     ROUNDS rounds through the Messenger
//                                     (STORE "file" or a URL): ping sends
//                                     "ping i" and waits for "pong i"; pong
//                                     waits for "ping i" and answers it
// DIR / TASKDIR may be a postgres:// URL instead: the same on the
// PostgreSQL store (DESIGN §13), team "procs".
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_set>

#include "core/clock.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "pg/store.h"
#include "store/board.h"
#include "store/mailbox.h"
#include "store/messenger.h"
#include "stores/open_store.h"
#include "store/watcher.h"
#include "support/test_env.h"

using namespace mates;

namespace {

int Die(const std::string& what) {
  std::fprintf(stderr, "store_helper: %s\n", what.c_str());
  return 1;
}

constexpr const char* kPgTeam = "procs";

bool IsPg(const std::string& where) { return where.rfind("postgres", 0) == 0; }

Result<std::unique_ptr<pg::Store>> OpenPg(const std::string& url) {
  MATES_ASSIGN_OR_RETURN(pg::Target t, pg::ParseTarget(url));
  return pg::Store::Open(t);
}


int Write(const std::string& dir, const std::string& member, long count, const std::string& tag) {
  std::unique_ptr<pg::Store> store;
  std::unique_ptr<Mailbox> box;
  if (IsPg(dir)) {
    auto opened = OpenPg(dir);
    if (!opened.ok()) return Die(opened.status().message());
    store = std::move(*opened);
  } else {
    box = std::make_unique<Mailbox>(dir, member);
  }
  for (long i = 0; i < count; ++i) {
    Message m;
    m.id = tag + "-" + std::to_string(i);
    m.sender = tag;
    m.recipient = member;
    m.content = "message " + std::to_string(i) + " from " + tag;
    m.timestamp = WallSeconds();
    Status s = store ? store->mail().Append(kPgTeam, member, m) : box->Append(m);
    if (!s.ok()) return Die(s.message());
  }
  return 0;
}

// The sink is this consumer's durable record: ids in it were delivered.
// A kill can tear its last line; cut that off, as a journal would.
std::unordered_set<std::string> LoadSink(const std::string& sink) {
  std::unordered_set<std::string> ids;
  auto data = ReadFile(sink);
  if (!data.ok()) return ids;
  size_t keep = data->rfind('\n');
  keep = keep == std::string::npos ? 0 : keep + 1;
  if (keep != data->size()) {
    if (::truncate(sink.c_str(), static_cast<off_t>(keep)) != 0) std::perror("truncate");
  }
  size_t start = 0;
  while (start < keep) {
    size_t end = data->find('\n', start);
    auto m = ParseMessageLine(std::string_view(*data).substr(start, end - start));
    if (m.ok()) ids.insert(m->id);
    start = end + 1;
  }
  return ids;
}

// Drains into `sink` until it holds `expect` ids: `begin` starts a drain
// (suppressing what the sink holds), `commit` ends it, `idle` says a batch
// had nothing to do (then the loop waits on `waker`).
template <typename Begin, typename Commit, typename Idle>
int DrainLoop(const std::string& sink, size_t expect, Waker& waker, Begin&& begin, Commit&& commit, Idle&& idle) {
  std::unordered_set<std::string> delivered = LoadSink(sink);
  ScopedFd out(::open(sink.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!out.valid()) return Die("open sink");
  while (delivered.size() < expect) {
    uint64_t seen = waker.generation();
    auto batch = begin([&](const std::string& id) { return delivered.count(id) > 0; });
    if (!batch.ok()) return Die(batch.status().message());
    std::string lines;
    for (const auto& m : batch->messages) {
      lines += MessageToLine(m);
      delivered.insert(m.id);
    }
    if (!lines.empty()) {
      Status s = WriteAll(out.get(), lines, sink.c_str());
      if (!s.ok()) return Die(s.message());
    }
    Status c = commit(*batch);
    if (!c.ok()) return Die(c.message());
    if (idle(*batch)) waker.WaitChange(seen, DeadlineIn(1.0));
  }
  std::printf("%zu\n", delivered.size());
  return 0;
}

int Drain(const std::string& dir, const std::string& member, const std::string& sink, size_t expect) {
  auto waker = std::make_shared<Waker>();
  if (IsPg(dir)) {
    auto store = OpenPg(dir);
    if (!store.ok()) return Die(store.status().message());
    auto sub = (*store)->listener().Subscribe(pg::InboxKey(kPgTeam, member), waker);
    if (!sub.ok()) return Die(sub.status().message());
    pg::Store& st = **store;
    return DrainLoop(
        sink, expect, *waker, [&](const auto& already) { return st.mail().BeginDrain(kPgTeam, member, already); },
        [&](pg::MailRows::Batch& b) { return st.mail().Commit(b); }, [](const pg::MailRows::Batch& b) { return b.rows.empty(); });
  }
  Mailbox box(dir, member);
  auto sub = mates::testing::TestEnv().watcher.Subscribe(dir, member + "_inbox.jsonl", waker);
  if (!sub.ok()) return Die(sub.status().message());
  return DrainLoop(
      sink, expect, *waker, [&](const auto& already) { return box.BeginDrain(already); },
      [&](Mailbox::Batch& b) { return box.Commit(b); },
      [](const Mailbox::Batch& b) { return b.messages.empty() && !b.redelivery; });
}

// Hosts `agent` of the PostgreSQL store's team: holds its liveness lock,
// says "hosting", waits to be killed.
int Host(const std::string& url, const std::string& agent) {
  auto store = OpenPg(url);
  if (!store.ok()) return Die(store.status().message());
  auto held = (*store)->liveness().Hold(kPgTeam, agent);
  if (!held.ok()) return Die(held.status().message());
  std::printf("hosting\n");
  std::fflush(stdout);
  for (;;) ::pause();
}

int HoldLock(const std::string& path, int range) {
  // A folder (the task board's lock) or a lock file.
  auto lock = fs::is_directory(path) ? FileLock::AcquireFolder(path)
                                     : FileLock::Acquire(path, static_cast<FileLock::Range>(range));
  if (!lock.ok()) return Die(lock.status().message());
  std::printf("locked\n");
  std::fflush(stdout);
  for (;;) ::pause();
}

int ClaimLoop(const std::string& dir, const std::string& owner, const std::string& out_path) {
  std::unique_ptr<Board> board;
  std::unique_ptr<pg::Store> store;
  if (IsPg(dir)) {
    auto s = OpenPg(dir);
    if (!s.ok()) return Die(s.status().message());
    store = std::move(*s);
  } else {
    board = std::make_unique<Board>(dir);
  }
  ScopedFd out(::open(out_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!out.valid()) return Die("open out");
  long n = 0;
  for (;;) {
    auto t = store ? store->tasks().ClaimNext(kPgTeam, owner) : board->ClaimNext(owner);
    if (!t.ok()) return Die(t.status().message());
    if (!t->has_value()) break;
    Status s = WriteAll(out.get(), std::to_string((*t)->id) + "\n", out_path.c_str());
    if (!s.ok()) return Die(s.message());
    ++n;
  }
  std::printf("%ld\n", n);
  return 0;
}

// Waits in `box` (watched by `waker`) for a message of `from` saying
// `text`; what else comes is an error.
Status AwaitFrom(Inbox& box, Waker& waker, const std::string& from, const std::string& text) {
  Deadline deadline = DeadlineIn(30);
  for (;;) {
    uint64_t seen = waker.generation();
    std::vector<Message> got;
    MATES_ASSIGN_OR_RETURN(Inbox::Taken taken, box.Take([&](const std::vector<Message>& msgs) {
      got = msgs;
      return true;
    }));
    for (const Message& m : got) {
      if (m.sender != from || m.content != text) {
        return Status::Internal("expected '" + text + "' from " + from + ", got '" + m.content + "' from " + m.sender);
      }
    }
    if (!got.empty()) return Status::Ok();
    if (taken.more) continue;
    if (waker.WaitChange(seen, deadline) == seen && Expired(deadline)) {
      return Status::Timeout("no '" + text + "' from " + from + " within 30 s");
    }
  }
}

int PingPong(const std::string& url, const std::string& ws, const std::string& team, const std::string& me,
             const std::string& peer, long rounds, const std::string& role) {
  auto store = OpenTeamStore(url == "file" ? "" : url, Workspace(ws), mates::testing::TestEnv());
  if (!store.ok()) return Die(store.status().message());
  std::unique_ptr<TeamMail> mail = (*store)->Mail(team);
  Messenger messenger(*mail);
  std::unique_ptr<Inbox> box = (*store)->InboxOf(team, me);
  auto waker = std::make_shared<Waker>();
  auto watch = box->WatchWith(waker);
  if (!watch.ok()) return Die(watch.status().message());
  auto send = [&](const std::string& text) -> Status {
    SendRequest r;
    r.sender = me;
    r.recipient = peer;
    r.content = text;
    return messenger.Send(std::move(r)).status();
  };
  const bool pinger = role == "ping";
  for (long i = 0; i < rounds; ++i) {
    const std::string n = std::to_string(i);
    Status s = pinger ? send("ping " + n) : AwaitFrom(*box, *waker, peer, "ping " + n);
    if (s.ok()) s = pinger ? AwaitFrom(*box, *waker, peer, "pong " + n) : send("pong " + n);
    if (!s.ok()) return Die(s.message());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "write" && argc == 6) return Write(argv[2], argv[3], std::atol(argv[4]), argv[5]);
  if (cmd == "drain" && argc == 6) {
    return Drain(argv[2], argv[3], argv[4], static_cast<size_t>(std::atol(argv[5])));
  }
  if (cmd == "host" && argc == 4) return Host(argv[2], argv[3]);
  if (cmd == "hold-lock" && argc == 4) return HoldLock(argv[2], std::atoi(argv[3]));
  if (cmd == "claim-loop" && argc == 5) return ClaimLoop(argv[2], argv[3], argv[4]);
  if (cmd == "pingpong" && argc == 9) {
    return PingPong(argv[2], argv[3], argv[4], argv[5], argv[6], std::atol(argv[7]), argv[8]);
  }
  return Die("usage: write|drain|hold-lock|claim-loop … (see the source)");
}
