// The router (see cluster.h): the bridge between the team named after the
// cluster and its panes, one thread per pane agent.
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "agent/activity.h"
#include "core/env.h"
#include "core/file_lock.h"
#include "core/files.h"
#include "core/guarded.h"
#include "core/json.h"
#include "core/log.h"
#include "core/waker.h"
#include "store/mailbox.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "store/settled_writer.h"
#include "store/watcher.h"
#include "tmux/cli_usage.h"
#include "tmux/cli_wiring.h"
#include "tmux/cluster.h"

namespace mates::tmux {

// A pane agent's activity document (agent/activity.h), kept by its router
// so that status, usage and the page show it like any member: thinking
// while a message is typed in and answered, idle otherwise, with the usage
// its CLI recorded (tmux/cli_usage.h) read again every few seconds.
class PaneActivity {
 public:
  PaneActivity(const Workspace& ws, const ClusterConfig& c, const AgentConfig& a, const Env& env)
      : file_(ws.AgentsDir(c.name) / (a.name + ".status.json"), a.name, "", env.files, env.prices) {
    auto doc = ReadFile(c.state_dir() / "state.json");
    auto state = doc.ok() ? ParseJson(*doc) : Result<Json>(doc.status());
    const Json records = state.ok() && state->is_object() ? state->value("records", Json::object()) : Json::object();
    const Json mine = records.is_object() ? records.value(a.name, Json::object()) : Json::object();
    const std::string cli = StringOr(mine, "cli"), path = StringOr(mine, "path");
    if (path.empty()) {
      file_.SetUsageUnknown(cli.empty() ? "its command records no usage mates reads"
                                        : "its CLI (" + cli + ") records no usage mates reads");
      return;
    }
    const double since = state.ok() && state->is_object() ? state->value("started_at_s", 0.0) : 0.0;
    from_ = RecordsName(cli) + " in " + path;
    // The handshake `up` sent it names it and the cluster (Cluster::Handshake).
    reader_.emplace(cli, path,
                    std::vector<std::string>{"You are " + a.name + " (",
                                             "in the cluster " + c.name + ". Reply with your marker"},
                    since);
  }
  void Busy() { file_.Thinking(); }
  void Idle() {
    file_.Idle();
    Refresh(true);
  }
  // What its CLI recorded, if a few seconds passed since the last look (or `now`).
  void Refresh(bool now = false) {
    if (!reader_ || (!now && SteadyClock::now() - last_ < std::chrono::seconds(5))) return;
    last_ = SteadyClock::now();
    auto u = reader_->Read();
    if (!u.ok()) {
      LogWarning("router: " + from_ + ": " + u.status().message());
      return;
    }
    if (!*u || ((*u)->calls == shown_.calls && (*u)->usage.output_tokens == shown_.usage.output_tokens &&
                (*u)->usage.input_tokens == shown_.usage.input_tokens)) {
      return;
    }
    shown_ = **u;
    file_.SetCliUsage(from_, shown_.model, shown_.usage, shown_.calls, shown_.cost_usd);
  }

 private:
  agent::ActivityFile file_;
  std::optional<CliUsageReader> reader_;
  std::string from_;
  CliUsage shown_;
  SteadyClock::time_point last_{};
};

void Cluster::NudgeLoop(const AgentConfig& agent, const Mailbox& box, Waker& waker, PaneActivity& activity,
                        const std::atomic<bool>& stop) {
  // The agent reads its inbox itself (read_inbox over MCP); the router
  // only tells it, once per message, that messages wait.
  Workspace ws(config_.work_dir);
  std::set<std::string> told;
  while (!stop.load()) {
    uint64_t g = waker.generation();
    auto waiting = box.MayHavePending() ? box.Peek() : Result<std::vector<Message>>(std::vector<Message>{});
    if (!waiting.ok()) LogWarning("router: " + agent.name + "'s inbox: " + waiting.status().message());
    if (waiting.ok()) {
      std::set<std::string> now, senders;
      std::vector<std::string> fresh;
      for (const auto& m : *waiting) {
        now.insert(m.id);
        if (told.count(m.id) == 0) {
          fresh.push_back(m.id);
          senders.insert(m.sender);
        }
      }
      // Read messages leave the inbox, and this list with them.
      std::erase_if(told, [&](const std::string& id) { return now.count(id) == 0; });
      if (!fresh.empty()) {
        std::string from;
        for (const auto& s : senders) from += (from.empty() ? "" : ", ") + s;
        std::string text = "You have " + std::to_string(fresh.size()) + " new message" +
                           (fresh.size() == 1 ? "" : "s") + " in your team inbox (from " + from +
                           "). Read them with the " + McpToolName(agent.cli, "read_inbox") +
                           " tool and answer with " + McpToolName(agent.cli, "send_message") + ".";
        WarnIfFailed(Roster(ws).SetStatus(config_.name, agent.name, MemberStatus::kActive), agent.name + "'s status");
        activity.Busy();
        auto reply = Send("mates", agent.name, text);
        activity.Idle();
        WarnIfFailed(Roster(ws).SetStatus(config_.name, agent.name, MemberStatus::kIdle), agent.name + "'s status");
        if (reply.ok()) {
          told.insert(fresh.begin(), fresh.end());
        } else {
          LogWarning("router: telling " + agent.name + " of its messages: " + reply.status().message());
        }
        continue;  // more may have come meanwhile
      }
    }
    activity.Refresh();
    waker.WaitChange(g, DeadlineIn(1));
  }
}

Status Cluster::Route(const std::atomic<bool>& stop, const Env& env) {
  Workspace ws(config_.work_dir);
  fs::path team_dir = ws.TeamDir(config_.name);
  std::vector<std::thread> threads;
  for (const auto& agent : config_.agents) {
    threads.emplace_back([&, &agent = agent, name = agent.name] {
     RunGuarded("router for " + name, [&] {
      // This router hosts the pane agent: its host lock says it is alive
      // (DESIGN §10), and a second router leaves it alone.
      (void)EnsureDir(ws.AgentsDir(config_.name));
      auto host = FileLock::TryAcquire(ws.AgentsDir(config_.name) / (name + ".lock"));
      if (!host.ok()) {
        LogWarning("router: " + name + " is routed by another process already; not routing it here");
        return;
      }
      auto waker = std::make_shared<Waker>();
      auto sub = env.watcher.Subscribe(team_dir, Workspace::InboxFileName(name), waker);
      if (!sub.ok()) LogWarning("router: cannot watch " + name + "'s inbox (" + sub.status().message() + "); looking every second");
      Mailbox box(team_dir, name);
      PaneActivity activity(ws, config_, agent, env);
      if (agent.mcp) {
        NudgeLoop(agent, box, *waker, activity, stop);
        return;
      }
      while (!stop.load()) {
        uint64_t g = waker->generation();
        if (box.MayHavePending()) {
          auto batch = box.BeginDrain();
          if (batch.ok()) {
            // The agent is at work for someone: a lead waiting on its team
            // sees it (and `mates team show`).
            WarnIfFailed(Roster(ws).SetStatus(config_.name, name, MemberStatus::kActive), name + "'s status");
            activity.Busy();
            for (const auto& m : batch->messages) {
              // An answer the router brought back (it names the message it
              // answers) is delivered, and what the agent says to it stays
              // in the log: answering answers would never end.
              const bool answer = m.type == MessageType::kMessage && !m.request_id.empty();
              std::string text = answer ? "Reply from " + m.sender + " to your message: " + m.content
                                        : "Message from " + m.sender + " (" + std::string(MessageTypeName(m.type)) +
                                              (m.summary.empty() ? "" : ", " + m.summary) + "): " + m.content;
              auto reply = Send(m.sender, name, text);
              if (answer) continue;
              SendRequest back;
              back.sender = name;
              back.recipient = m.sender;
              back.summary = "reply from " + name;
              back.request_id = m.id;
              back.content = reply.ok() ? *reply : "(no reply: " + reply.status().message() + ")";
              auto sent = Messenger(ws, config_.name).Send(back);
              WarnIfFailed(sent.status(), name + "'s reply to " + m.sender);
            }
            WarnIfFailed(box.Commit(*batch), name + "'s inbox");
            activity.Idle();
            WarnIfFailed(Roster(ws).SetStatus(config_.name, name, MemberStatus::kIdle), name + "'s status");
            continue;
          }
          LogWarning("router: " + name + "'s inbox: " + batch.status().message());
        }
        activity.Refresh();
        waker->WaitChange(g, DeadlineIn(1));
      }
     });
    });
  }
  for (auto& t : threads) t.join();
  return Status::Ok();
}

}  // namespace mates::tmux
