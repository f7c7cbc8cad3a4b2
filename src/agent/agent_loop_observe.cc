// What an agent's loop tells beyond its conversation (see agent_loop.h):
// its metrics and spans (DESIGN §29) and the person's hooks it raises
// (DESIGN §22).
#include <nlohmann/json.hpp>

#include "agent/agent_loop.h"
#include "agent/frames.h"
#include "core/ids.h"
#include "core/log.h"
#include "store/messenger.h"
#include "store/task.h"
#include "store/team_store.h"
#include "tools/hook_calls.h"

namespace mates::agent {

void AgentLoop::Count(std::string_view family, telemetry::Labels labels) {
  if (!spec_.metrics) return;
  labels["team"] = ctx_->team;
  labels["agent"] = spec_.name;
  spec_.metrics->Add(family, labels);
}

void AgentLoop::Measure(const Result<llm::Response>& reply, double seconds) {
  if (!spec_.metrics) return;
  // The GenAI conventions' attributes, '.' as '_' (telemetry/metrics.h).
  telemetry::Labels labels = {{"gen_ai_operation_name", "chat"},
                              {"gen_ai_provider_name", std::string(provider_->name())},
                              {"gen_ai_request_model", model()},
                              {"gen_ai_agent_name", spec_.name},
                              {"team", ctx_->team}};
  if (!reply.ok()) labels["error_type"] = telemetry::ErrorTypeOf(reply.status().code());
  spec_.metrics->Observe(telemetry::kOperationDuration, labels, seconds);
  if (!reply.ok()) return;
  const llm::Usage& u = reply->usage;
  labels["gen_ai_token_type"] = "input";
  spec_.metrics->Observe(telemetry::kTokenUsage, labels,
                         static_cast<double>(u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens));
  labels["gen_ai_token_type"] = "output";
  spec_.metrics->Observe(telemetry::kTokenUsage, labels, static_cast<double>(u.output_tokens));
}

telemetry::Span AgentLoop::StartSpan(std::string name, telemetry::SpanKind kind) {
  if (!spec_.tracer) return {};
  const TraceContext& current = CurrentTrace();
  return spec_.tracer->Start(std::move(name), kind, current.valid() ? current : spec_.tracer->session());
}

// A message, from its send to its taking in: a span under the sender's
// (its traceparent), linked both ways with the turn that takes it in.
void AgentLoop::MessageSpan(const Message& m) {
  if (!spec_.tracer || m.traceparent.empty() || m.timestamp <= 0) return;
  auto sender = ParseTraceparent(m.traceparent);
  if (!sender) return;
  telemetry::SpanRecord rec;
  rec.name = "message " + std::string(MessageTypeName(m.type));
  rec.kind = telemetry::SpanKind::kConsumer;
  rec.start_ns = static_cast<int64_t>(m.timestamp * 1e9);
  rec.end_ns = telemetry::UnixNanos();
  if (rec.start_ns > rec.end_ns) rec.start_ns = rec.end_ns;
  rec.attributes = {{"mates.message.id", m.id},
                    {"mates.message.type", std::string(MessageTypeName(m.type))},
                    {"mates.message.sender", m.sender},
                    {"mates.message.recipient", spec_.name}};
  if (turn_span_ != nullptr && turn_span_->context().valid()) {
    rec.links.push_back({turn_span_->context(), {{"mates.link", std::string("taken in by")}}});
  }
  // Recorded under the sender's span: its id is only known once made.
  const TraceContext made = spec_.tracer->Record(std::move(rec), *sender);
  if (turn_span_ != nullptr && made.valid()) turn_span_->Link(made, {{"mates.link", std::string("message")}});
}

// task {id}: from its claim (the history's last turn to in_progress) to
// the TaskUpdate that completed it, under the session, linked to the turn.
void AgentLoop::TaskSpan(const llm::ContentBlock& call, const tools::ToolResult& r) {
  if (call.name != "TaskUpdate" || r.is_error || ctx_->team.empty()) return;
  auto input = ParseJson(call.input_json.empty() ? "{}" : call.input_json);
  // The model's input, read without a throw: `status` may be anything
  // (the tool ran on what a hook made of it).
  if (!input.ok() || !input->is_object()) return;
  auto status = input->find("status");
  if (status == input->end() || !status->is_string() || status->get<std::string>() != "completed") return;
  auto raw = input->find("task_id");
  int64_t id = 0;
  if (raw != input->end() && raw->is_number_integer()) {
    id = raw->get<int64_t>();
  } else if (raw != input->end() && raw->is_string()) {
    const std::string& text = raw->get_ref<const std::string&>();
    id = std::strtoll(text.c_str() + (text.rfind('#', 0) == 0 ? 1 : 0), nullptr, 10);
  }
  auto board = ctx_->store().CheckedBoard(ctx_->team);
  if (id <= 0 || !board.ok()) return;
  auto task = (*board)->Get(id);
  if (!task.ok() || task->status != TaskStatus::kCompleted) return;
  double claimed = task->created_at;
  for (auto e = task->history.rbegin(); e != task->history.rend(); ++e) {
    if (e->status == TaskStatus::kInProgress) claimed = e->at;
    if (e->status == TaskStatus::kPending) break;
  }
  telemetry::SpanRecord rec;
  rec.name = "task " + TaskRef(id);
  rec.start_ns = static_cast<int64_t>(claimed * 1e9);
  rec.end_ns = telemetry::UnixNanos();
  if (rec.start_ns <= 0 || rec.start_ns > rec.end_ns) rec.start_ns = rec.end_ns;
  rec.attributes = {{"mates.task.id", id}, {"mates.task.subject", task->subject},
                    {"mates.task.owner", task->owner}, {"mates.team", ctx_->team}};
  const TraceContext& current = CurrentTrace();
  if (current.valid()) rec.links.push_back({current, {{"mates.link", std::string("completed by")}}});
  spec_.tracer->Record(std::move(rec), spec_.tracer->session());
}

void AgentLoop::ReportBlocked(const std::string& event, const std::string& what) {
  if (activity_) activity_->Blocked(event, what);
  Count(telemetry::kHookBlocks, {{"event", event}});
  if (ctx_->team.empty()) return;
  // In the team's message timeline too, from `hooks` (a name no member may
  // take), to the agent it stopped; logged, not delivered: the agent has
  // the hook's words already.
  Message m;
  m.id = NewId("m");
  m.sender = kHooksName;
  m.recipient = spec_.name;
  m.content = "A " + event + " hook blocked " + what;
  m.summary = event + " hook blocked";
  m.timestamp = WallSeconds();
  Status logged = ctx_->store().Mail(ctx_->team)->Log(m);
  if (!logged.ok()) LogWarning(spec_.name + ": the hook's block is not in the log: " + logged.message());
}

void AgentLoop::StartSession(const std::string& source) {
  if (!ctx_->hooks || !ctx_->hooks->Wants(hooks::Event::kSessionStart, {source})) return;
  Json in = tools::HookInput(*ctx_);
  in["source"] = source;
  hooks::Outcome o = tools::RunHooks(*ctx_, hooks::Event::kSessionStart, {source}, std::move(in));
  if (!o.context.empty()) AddNotice("[SessionStart hook] " + NeutraliseFrames(o.context));
}

hooks::Outcome AgentLoop::PromptHooks(const std::string& text) {
  if (!ctx_->hooks || !ctx_->hooks->Wants(hooks::Event::kUserPromptSubmit)) return {};
  Json in = tools::HookInput(*ctx_);
  in["prompt"] = text;
  return tools::RunHooks(*ctx_, hooks::Event::kUserPromptSubmit, {}, std::move(in));
}

}  // namespace mates::agent
