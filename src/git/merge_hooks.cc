#include "git/merge_hooks.h"

#include "core/log.h"
#include "git/git.h"
#include "store/messenger.h"

namespace mates::git {

hooks::Outcome RaiseMergeHook(const MergeHooks& h, hooks::Event e, const std::string& team, const MergeRequest& m) {
  const std::string subject =
      e == hooks::Event::kMergeQueued ? m.owner : std::string(MergeStateName(m.status));
  if (!h.runner || !h.runner->Wants(e, {subject})) return {};
  Json in = Json::object();
  in["session_id"] = std::string(kMergeQueueName) + "@" + team;
  in["transcript_path"] = "";
  in["cwd"] = h.ws.root().string();
  in["permission_mode"] = "default";
  in["team_name"] = team;
  in["agent_name"] = kMergeQueueName;
  in["merge"] = MergeRequestToJson(m);
  in["task"] = {{"id", m.task}, {"subject", m.subject}};
  hooks::Launch l;
  l.sandbox = h.sandbox;
  l.place = {h.ws.root(), team, kMergeQueueName};
  l.env = ChildEnvironment(/*c_locale=*/false);
  l.env.push_back("CLAUDE_PROJECT_DIR=" + h.ws.root().string());
  l.cwd = h.ws.root();
  hooks::Outcome o = h.runner->Run(e, {subject}, std::move(in), l);
  for (const auto& err : o.errors) {
    LogWarning("merge queue: " + std::string(hooks::EventName(e)) + ": " + err);
  }
  return o;
}

}  // namespace mates::git
