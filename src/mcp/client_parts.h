// The parts both kinds of client session share (mcp/client.cc for stdio,
// mcp/http_client.cc for HTTP): the table of requests in flight and the
// frames a request is made of. Internal to src/mcp.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "core/cancel.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/status.h"
#include "mcp/client.h"

namespace mates::mcp::internal {

// What a request waits on: its answer, or the session's end. `wake` is
// cancelled to wake the waiter (the caller's token is linked to it too).
struct Pending {
  std::optional<Result<Json>> answer;
  CancelToken wake;
  SteadyClock::duration held_before{};  // the table's held time when it was sent
};

inline Status ServerError(const Json& error) {
  std::string message = error.is_object() && error.contains("message") && error["message"].is_string()
                            ? error["message"].get<std::string>()
                            : DumpJson(error);
  int code = error.is_object() && error.contains("code") && error["code"].is_number_integer() ? error["code"].get<int>() : 0;
  return Status::FailedPrecondition("the server answered with error " + std::to_string(code) + ": " + message);
}

inline double SecondsLeft(const Deadline& d) {
  if (!d) return 1e9;
  return std::max(0.0, std::chrono::duration<double>(*d - SteadyClock::now()).count());
}

// The requests in flight of one session, by id: what both transports share.
class PendingTable {
 public:
  // Registers request `id` and links `cancel` to its wake-up.
  std::shared_ptr<Pending> Add(int64_t id) {
    auto p = std::make_shared<Pending>();
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_) p->answer = Status::Unavailable(why_);
    p->held_before = HeldLocked();
    table_[id] = p;
    return p;
  }
  void Answer(int64_t id, Result<Json> answer) {
    std::shared_ptr<Pending> p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = table_.find(id);
      if (it == table_.end()) return;  // given up on, or not ours
      p = it->second;
      table_.erase(it);
      p->answer = std::move(answer);
    }
    p->wake.Cancel();
  }
  // Every waiter gets `why` as its answer; later requests too.
  void CloseAll(const std::string& why) {
    std::map<int64_t, std::shared_ptr<Pending>> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = false;
      why_ = why;
      all.swap(table_);
      for (auto& [id, p] : all) p->answer = Status::Unavailable(why);
    }
    for (auto& [id, p] : all) p->wake.Cancel();
  }
  // Waits for the answer to `id`; nullopt if the deadline or the cancel
  // came first (the request is then forgotten). The time the session was
  // held (Hold) while it waited is added to its deadline.
  std::optional<Result<Json>> Wait(int64_t id, const std::shared_ptr<Pending>& p, const Deadline& deadline,
                                   const CancelToken* cancel) {
    CancelLink link(const_cast<CancelToken*>(cancel), &p->wake);
    for (;;) {
      double wait_s = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (p->answer) return std::move(*p->answer);
        Deadline moved = deadline;
        if (moved) *moved += HeldLocked() - p->held_before;
        if ((cancel != nullptr && cancel->cancelled()) || (held_ == 0 && mates::Expired(moved))) {
          table_.erase(id);
          return std::nullopt;
        }
        // Held: looked at again each second, since a release wakes nobody.
        wait_s = held_ > 0 ? 1.0 : SecondsLeft(moved);
      }
      p->wake.WaitFor(wait_s);
    }
  }
  // Whether `p`'s deadline (moved by the time held) has passed; never
  // while held.
  bool Expired(const std::shared_ptr<Pending>& p, const Deadline& deadline) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_ > 0 || !deadline) return false;
    return mates::Expired(Deadline(*deadline + (HeldLocked() - p->held_before)));
  }
  // While the server waits on us — its question put to a person, its
  // sampling to a model —, what it was asked does not time out: the time
  // is added to every deadline. Hold and Release come in pairs.
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_++ == 0) held_since_ = SteadyClock::now();
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--held_ == 0) held_total_ += SteadyClock::now() - held_since_;
  }
  // Whether `p`'s answer is in.
  bool Ready(const std::shared_ptr<Pending>& p) const {
    std::lock_guard<std::mutex> lock(mu_);
    return p->answer.has_value();
  }
  bool open() const {
    std::lock_guard<std::mutex> lock(mu_);
    return open_;
  }
  std::string why() const {
    std::lock_guard<std::mutex> lock(mu_);
    return why_;
  }

 private:
  mutable std::mutex mu_;
  std::map<int64_t, std::shared_ptr<Pending>> table_;  // guarded by mu_
  bool open_ = true;                                   // guarded by mu_
  std::string why_;                                    // guarded by mu_
  int held_ = 0;                                       // guarded by mu_: Holds not released
  SteadyClock::time_point held_since_;                 // guarded by mu_
  SteadyClock::duration held_total_{};                 // guarded by mu_: of the Holds released

  SteadyClock::duration HeldLocked() const {
    return held_total_ + (held_ > 0 ? SteadyClock::now() - held_since_ : SteadyClock::duration{});
  }
};

// Where one message from the server goes, whatever carried it: an answer
// to its waiter in `pending`, a request of the server's to `requests`, a
// notification to `notified`. Its kind (kInvalid: the caller may say so).
inline Incoming::Kind Route(const Json& msg, PendingTable& pending, ServerRequests& requests,
                            const std::function<void(const std::string&, const Json&)>& notified) {
  Incoming in = Classify(msg);
  switch (in.kind) {
    case Incoming::Kind::kResponse:
      if (in.id.is_number_integer()) {
        auto error = msg.find("error");
        auto result = msg.find("result");
        pending.Answer(in.id.get<int64_t>(), error != msg.end()    ? Result<Json>(ServerError(*error))
                                             : result != msg.end() ? Result<Json>(*result)
                                                                   : Result<Json>(Json()));
      }
      break;
    case Incoming::Kind::kRequest:
      requests.Handle(in);
      break;
    case Incoming::Kind::kNotification:
      notified(in.method, in.params);
      break;
    case Incoming::Kind::kInvalid:
      break;
  }
  return in.kind;
}

// The timeout or the cancel of request `id`, said to the server too.
inline Status GaveUp(Session& s, int64_t id, const std::string& method, const CancelToken* cancel) {
  const bool cancelled = cancel != nullptr && cancel->cancelled();
  std::string reason = cancelled ? "cancelled" : "timed out";
  (void)s.Notify("notifications/cancelled", Json{{"requestId", id}, {"reason", reason}});
  return cancelled ? Status::Cancelled(method + " cancelled") : Status::Timeout(method + " timed out");
}

inline Json RequestMessage(int64_t id, const std::string& method, Json params) {
  Json m = Json::object();
  m["jsonrpc"] = "2.0";
  m["id"] = id;
  m["method"] = method;
  if (!params.is_null()) m["params"] = std::move(params);
  return m;
}

inline Json NotificationMessage(const std::string& method, Json params) {
  Json m = Json::object();
  m["jsonrpc"] = "2.0";
  m["method"] = method;
  if (!params.is_null()) m["params"] = std::move(params);
  return m;
}

}  // namespace mates::mcp::internal
