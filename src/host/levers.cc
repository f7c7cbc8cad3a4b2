#include "host/levers.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/guarded.h"
#include "core/json.h"
#include "core/names.h"
#include "core/unix_socket.h"

namespace mates::host {
namespace {

constexpr size_t kMaxLeverRequestBytes = 64 << 10;
constexpr size_t kMaxLeverReasonBytes = 4 << 10;
constexpr size_t kMaxLeverAnswerBytes = 64 << 10;
constexpr double kLeverRequestSeconds = 5;
// A restart replays a journal before it answers; a stop sends a message.
constexpr double kLeverAnswerSeconds = 60;

std::string Answered(const Result<std::string>& r) {
  if (r.ok()) return DumpJson(Json{{"ok", true}, {"said", *r}}) + "\n";
  return DumpJson(Json{{"ok", false}, {"error", r.status().message()}}) + "\n";
}

}  // namespace

Result<LeverRequest> ParseLeverRequest(const std::string& line) {
  auto j = ParseJson(line);
  if (!j.ok() || !j->is_object()) return Status::InvalidArgument("a request is one JSON object");
  LeverRequest r;
  MATES_ASSIGN_OR_RETURN(r.op, JsonString(*j, "op", true));
  MATES_ASSIGN_OR_RETURN(r.team, JsonString(*j, "team", true));
  MATES_ASSIGN_OR_RETURN(r.agent, JsonString(*j, "agent", true));
  MATES_ASSIGN_OR_RETURN(r.reason, JsonString(*j, "reason", false));
  if (r.op != "stop" && r.op != "restart" && r.op != "interrupt" && r.op != "attach") {
    return Status::InvalidArgument("op must be stop, restart, interrupt or attach, not '" + r.op + "'");
  }
  MATES_RETURN_IF_ERROR(ValidateName("team name", r.team));
  MATES_RETURN_IF_ERROR(ValidateName("member name", r.agent));
  if (r.reason.size() > kMaxLeverReasonBytes) return Status::InvalidArgument("the reason is longer than 4 KiB");
  return r;
}

std::string LeverRequestLine(const LeverRequest& r) {
  Json j{{"op", r.op}, {"team", r.team}, {"agent", r.agent}};
  if (!r.reason.empty()) j["reason"] = r.reason;
  return DumpJson(j) + "\n";
}

Result<std::unique_ptr<Levers>> Levers::Start(fs::path socket, LeverHandler handler, AttachHandler attach) {
  MATES_ASSIGN_OR_RETURN(ScopedFd fd, ListenUnix(socket, 8));
  return std::unique_ptr<Levers>(new Levers(std::move(socket), std::move(fd), std::move(handler), std::move(attach)));
}

Levers::Levers(fs::path path, ScopedFd listen, LeverHandler handler, AttachHandler attach)
    : path_(std::move(path)), listen_(std::move(listen)), handler_(std::move(handler)), attach_(std::move(attach)) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    wake_r_.reset(fds[0]);
    wake_w_.reset(fds[1]);
  }
  thread_ = std::thread([this] {
    NameThisThread("mates-levers");
    RunGuarded("the host's levers", [this] { Serve(); });
  });
}

Levers::~Levers() {
  stop_.store(true);
  if (wake_w_.valid()) (void)!::write(wake_w_.get(), "x", 1);
  if (thread_.joinable()) thread_.join();
  ::unlink(path_.c_str());
}

void Levers::Serve() {
  while (!stop_.load()) {
    struct pollfd p[2] = {{listen_.get(), POLLIN, 0}, {wake_r_.get(), POLLIN, 0}};
    int rc = ::poll(p, wake_r_.valid() ? 2 : 1, wake_r_.valid() ? -1 : 1000);
    if (rc < 0 && errno != EINTR) return;
    if (stop_.load()) return;
    if ((p[0].revents & POLLIN) == 0) continue;
    int c = ::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    ScopedFd conn(c);
    // The listening socket is non-blocking; its connections are not.
    ::fcntl(c, F_SETFL, ::fcntl(c, F_GETFL) & ~O_NONBLOCK);
    std::string answer = Answer(conn);
    if (conn.valid()) SendAllTo(c, answer);
  }
}

std::string Levers::Answer(ScopedFd& fd) {
  const int conn = fd.get();
  struct ucred peer {};
  socklen_t len = sizeof peer;
  if (::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != ::getuid()) {
    return Answered(Status::FailedPrecondition("only the user who runs the host may pull its levers"));
  }
  std::string line;
  if (!ReadSocketLine(conn, &line, kMaxLeverRequestBytes, DeadlineIn(kLeverRequestSeconds))) {
    return Answered(Status::InvalidArgument("a request is one line of at most 64 KiB, sent within 5 s"));
  }
  auto r = ParseLeverRequest(line);
  if (!r.ok()) return Answered(r.status());
  if (r->op == "attach") {
    Status s = attach_ ? attach_(*r, fd) : Status::FailedPrecondition("this host takes no terminal");
    return s.ok() ? "" : Answered(s);
  }
  return Answered(handler_(*r));
}

Result<std::string> PullLever(const fs::path& socket, const LeverRequest& r) {
  auto conn = ConnectUnix(socket);
  if (!conn.ok()) {
    return Status::Unavailable("the team's host does not answer at " + socket.string() + " (" +
                               conn.status().message() + ")");
  }
  if (!SendAllTo(conn->get(), LeverRequestLine(r))) return Status::Unavailable("the team's host closed the connection");
  std::string answer;
  if (!ReadSocketLine(conn->get(), &answer, kMaxLeverAnswerBytes, DeadlineIn(kLeverAnswerSeconds))) {
    return Status::Unavailable("the team's host did not answer");
  }
  auto j = ParseJson(answer);
  if (!j.ok() || !j->is_object() || !j->contains("ok") || !j->at("ok").is_boolean()) {
    return Status::Unavailable("the team's host answered what is not an answer");
  }
  const bool done = j->at("ok").get<bool>();
  auto text = JsonString(*j, done ? "said" : "error", true);
  if (!text.ok()) return Status::Unavailable("the team's host answered what is not an answer");
  if (!done) return Status::FailedPrecondition(*text);
  return *text;
}

}  // namespace mates::host
