#include "mcp/server.h"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>

namespace mates::mcp {

Server::Server(Options options, std::vector<ToolSpec> tools, std::function<void(const std::string&)> write)
    : options_(std::move(options)), tools_(std::move(tools)), write_(std::move(write)) {}

Server::~Server() { Shutdown(); }

void Server::Send(const std::string& frame) {
  std::lock_guard<std::mutex> lock(write_mu_);
  write_(frame);
}

size_t Server::waiting_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count_if(waiting_.begin(), waiting_.end(),
                                           [](const auto& w) { return !w.second->done.load(); }));
}

void Server::HandleFrame(std::string_view frame) {
  Reap();
  Incoming in = ParseFrame(frame);
  switch (in.kind) {
    case Incoming::Kind::kInvalid:
      Send(ErrorFrame(in.id, in.error_code, in.error));
      return;
    case Incoming::Kind::kResponse:
      return;  // we ask the client nothing, so no answer is awaited
    case Incoming::Kind::kNotification:
      HandleNotification(in);
      return;
    case Incoming::Kind::kRequest:
      HandleRequest(in);
      return;
  }
}

void Server::HandleNotification(const Incoming& in) {
  if (in.method == "notifications/cancelled") {
    auto id = in.params.find("requestId");
    if (id != in.params.end() && (id->is_string() || id->is_number_integer())) Cancel(*id);
  }
  // notifications/initialized and anything else: nothing to do.
}

void Server::HandleRequest(const Incoming& in) {
  if (in.method == "ping") {
    Send(ResultFrame(in.id, Json::object()));
    return;
  }
  if (in.method == "initialize") {
    if (initialized_.exchange(true)) {
      Send(ErrorFrame(in.id, kInvalidRequest, "already initialized"));
      return;
    }
    Send(ResultFrame(in.id, InitializeResult(in.params)));
    return;
  }
  const bool known = in.method == "tools/list" || in.method == "tools/call";
  if (!known) {
    Send(ErrorFrame(in.id, kMethodNotFound, "unknown method '" + in.method + "' (this server has tools only)"));
    return;
  }
  if (!initialized_.load()) {
    Send(ErrorFrame(in.id, kInvalidRequest, "not initialized: send initialize first"));
    return;
  }
  if (in.method == "tools/list") {
    if (in.params.contains("cursor") && !in.params["cursor"].is_null()) {
      // Every tool fits one page: no cursor was ever handed out.
      Send(ErrorFrame(in.id, kInvalidParams, "unknown cursor (the tool list has one page)"));
      return;
    }
    Send(ResultFrame(in.id, ToolsList()));
    return;
  }
  CallTool(in);
}

Json Server::InitializeResult(const Json& params) const {
  std::string asked;
  auto v = params.find("protocolVersion");
  if (v != params.end() && v->is_string()) asked = *v;
  // The client's revision if we speak it, else our newest (the client
  // decides whether it can go on with that).
  const bool spoken = std::find(kProtocolVersions.begin(), kProtocolVersions.end(), asked) != kProtocolVersions.end();
  Json result = Json::object();
  result["protocolVersion"] = spoken ? asked : kProtocolVersions.front();
  result["capabilities"] = Json{{"tools", Json{{"listChanged", false}}}};
  result["serverInfo"] = Json{{"name", options_.name}, {"version", options_.version}};
  if (!options_.instructions.empty()) result["instructions"] = options_.instructions;
  return result;
}

Json Server::ToolsList() const {
  Json list = Json::array();
  for (const ToolSpec& t : tools_) {
    Json tool = Json::object();
    tool["name"] = t.name;
    if (!t.title.empty()) tool["title"] = t.title;
    tool["description"] = t.description;
    tool["inputSchema"] = t.input_schema;
    Json annotations = Json::object();
    if (!t.title.empty()) annotations["title"] = t.title;
    annotations["readOnlyHint"] = t.read_only;
    annotations["openWorldHint"] = false;
    tool["annotations"] = std::move(annotations);
    list.push_back(std::move(tool));
  }
  return Json{{"tools", std::move(list)}};
}

Json Server::RunTool(const ToolSpec& tool, const Json& arguments, CallContext& call) const {
  ToolOutcome out;
  try {
    out = tool.run(arguments, call);
  } catch (const std::exception& e) {
    out = {std::string("internal error in ") + tool.name + ": " + e.what(), true};
  } catch (...) {
    out = {"internal error in " + tool.name, true};
  }
  Json result = Json::object();
  result["content"] = Json::array({Json{{"type", "text"}, {"text", out.text}}});
  result["isError"] = out.is_error;
  return result;
}

void Server::CallTool(const Incoming& in) {
  auto name = in.params.find("name");
  if (name == in.params.end() || !name->is_string()) {
    Send(ErrorFrame(in.id, kInvalidParams, "tools/call needs \"name\", a string"));
    return;
  }
  const std::string& wanted = name->get_ref<const std::string&>();
  auto tool = std::find_if(tools_.begin(), tools_.end(), [&](const ToolSpec& t) { return t.name == wanted; });
  if (tool == tools_.end()) {
    Send(ErrorFrame(in.id, kInvalidParams, "unknown tool '" + wanted + "'"));
    return;
  }
  Json arguments = Json::object();
  auto args = in.params.find("arguments");
  if (args != in.params.end() && !args->is_null()) {
    if (!args->is_object()) {
      Send(ErrorFrame(in.id, kInvalidParams, "\"arguments\" must be an object"));
      return;
    }
    arguments = *args;
  }
  // An id still in use would make two answers with one id.
  std::string key = DumpJson(in.id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto busy = waiting_.find(key);
    if (busy != waiting_.end() && !busy->second->done.load()) {
      Send(ErrorFrame(in.id, kInvalidRequest, "request id " + key + " is already in use by a call in progress"));
      return;
    }
  }
  if (!tool->may_wait || !tool->may_wait(arguments)) {
    CallContext call;
    Send(ResultFrame(in.id, RunTool(*tool, arguments, call)));
    return;
  }
  // A call that may wait runs beside the reader, which stays free for
  // pings, other calls and the cancellation of this one.
  Reap();  // a finished call with this id makes room
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return;
  if (waiting_.count(key) > 0) {
    Send(ErrorFrame(in.id, kInvalidRequest, "request id " + key + " is already in use by a call in progress"));
    return;
  }
  size_t running = static_cast<size_t>(
      std::count_if(waiting_.begin(), waiting_.end(), [](const auto& w) { return !w.second->done.load(); }));
  if (running >= options_.max_waiting_calls) {
    Send(ErrorFrame(in.id, kInternalError,
                    "too many waiting calls (" + std::to_string(running) + "); cancel one or wait for it"));
    return;
  }
  auto w = std::make_unique<Waiting>();
  w->key = key;
  Waiting* raw = w.get();
  const ToolSpec* spec = &*tool;
  raw->thread = std::thread([this, raw, spec, arguments = std::move(arguments), id = in.id] {
    Json result = RunTool(*spec, arguments, raw->call);
    // A cancelled request is not answered (MCP: cancellation).
    if (!raw->call.cancelled.load()) {
      Send(ResultFrame(id, std::move(result)));
    } else if (options_.on_unanswered) {
      options_.on_unanswered(id);
    }
    raw->done.store(true);
  });
  waiting_[key] = std::move(w);
}

void Server::Cancel(const Json& request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = waiting_.find(DumpJson(request_id));
  if (it == waiting_.end()) return;  // answered already, or never waiting: nothing to stop
  it->second->call.cancelled.store(true);
  it->second->call.waker->Notify();
}

void Server::Reap() {
  std::vector<std::unique_ptr<Waiting>> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->second->done.load()) {
        finished.push_back(std::move(it->second));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& w : finished) w->thread.join();
}

void Server::Shutdown() {
  std::vector<std::unique_ptr<Waiting>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
    for (auto& [key, w] : waiting_) {
      w->call.cancelled.store(true);
      w->call.waker->Notify();
      all.push_back(std::move(w));
    }
    waiting_.clear();
  }
  for (auto& w : all) w->thread.join();
}

}  // namespace mates::mcp
