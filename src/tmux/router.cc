// The router (see cluster.h): the bridge between the team named after the
// cluster and its panes, one thread per pane agent.
#include <set>
#include <thread>

#include "core/file_lock.h"
#include "core/files.h"
#include "core/guarded.h"
#include "core/log.h"
#include "core/waker.h"
#include "store/mailbox.h"
#include "store/messenger.h"
#include "store/roster.h"
#include "store/watcher.h"
#include "tmux/cli_wiring.h"
#include "tmux/cluster.h"

namespace mates::tmux {

void Cluster::NudgeLoop(const AgentConfig& agent, const Mailbox& box, Waker& waker,
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
        auto reply = Send("mates", agent.name, text);
        WarnIfFailed(Roster(ws).SetStatus(config_.name, agent.name, MemberStatus::kIdle), agent.name + "'s status");
        if (reply.ok()) {
          told.insert(fresh.begin(), fresh.end());
        } else {
          LogWarning("router: telling " + agent.name + " of its messages: " + reply.status().message());
        }
        continue;  // more may have come meanwhile
      }
    }
    waker.WaitChange(g, DeadlineIn(1));
  }
}

Status Cluster::Route(const std::atomic<bool>& stop) {
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
      auto sub = Watcher::Default().Subscribe(team_dir, Workspace::InboxFileName(name), waker);
      if (!sub.ok()) LogWarning("router: cannot watch " + name + "'s inbox (" + sub.status().message() + "); looking every second");
      Mailbox box(team_dir, name);
      if (agent.mcp) {
        NudgeLoop(agent, box, *waker, stop);
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
            WarnIfFailed(Roster(ws).SetStatus(config_.name, name, MemberStatus::kIdle), name + "'s status");
            continue;
          }
          LogWarning("router: " + name + "'s inbox: " + batch.status().message());
        }
        waker->WaitChange(g, DeadlineIn(1));
      }
     });
    });
  }
  for (auto& t : threads) t.join();
  return Status::Ok();
}

}  // namespace mates::tmux
