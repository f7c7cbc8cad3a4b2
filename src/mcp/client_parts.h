// The parts both kinds of client session share (mcp/client.cc for stdio,
// mcp/http_client.cc for HTTP): the table of requests in flight and the
// frames a request is made of. Internal to src/mcp.
#pragma once

#include <algorithm>
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
  // came first (the request is then forgotten).
  std::optional<Result<Json>> Wait(int64_t id, const std::shared_ptr<Pending>& p, const Deadline& deadline,
                                   const CancelToken* cancel) {
    CancelLink link(const_cast<CancelToken*>(cancel), &p->wake);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (p->answer) return std::move(*p->answer);
        if ((cancel != nullptr && cancel->cancelled()) || Expired(deadline)) {
          table_.erase(id);
          return std::nullopt;
        }
      }
      p->wake.WaitFor(SecondsLeft(deadline));
    }
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
};

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
