#include "host/attach.h"

#include <sys/socket.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "agent/activity.h"
#include "core/guarded.h"
#include "core/json.h"
#include "core/text.h"
#include "core/unix_socket.h"

namespace mates::host {
namespace {

// What a tool's result shows of itself: its first line is what a terminal
// prints, and a result may be megabytes.
constexpr size_t kResultBytes = 512;

// Where `s` ends with a whole UTF-8 character: a streamed piece may stop
// inside one, whose rest comes with the next.
size_t WholeUtf8(std::string_view s) {
  size_t back = 0;
  while (back < s.size() && back < 4 && (static_cast<unsigned char>(s[s.size() - 1 - back]) & 0xC0) == 0x80) ++back;
  if (back == s.size()) return s.size();
  const auto lead = static_cast<unsigned char>(s[s.size() - 1 - back]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return need > back + 1 ? s.size() - 1 - back : s.size();
}

}  // namespace

// One attached terminal: a thread reads its lines, another writes the
// events queued for it, so that no agent waits for it.
struct AttachHub::Session {
  Session(ScopedFd conn, AttachActions a) : fd(std::move(conn)), actions(std::move(a)) {}

  void Start(const std::string& hello) {
    Put(hello);
    writer = std::thread([this] {
      NameThisThread("mates-attach-w");
      RunGuarded("an attached terminal's writer", [this] { Write(); });
      Close();
      writing_done.store(true);
    });
    reader = std::thread([this] {
      NameThisThread("mates-attach-r");
      RunGuarded("an attached terminal's reader", [this] { Read(); });
      Close();
      reading_done.store(true);
    });
  }
  ~Session() {
    Close();
    if (reader.joinable()) reader.join();
    if (writer.joinable()) writer.join();
  }
  bool done() const { return reading_done.load() && writing_done.load(); }

  void Put(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    if (closed) return;
    if (queued + line.size() > kMaxQueuedBytes) {
      ++dropped;
      return;
    }
    queue.push_back(line);
    queued += line.size();
    cv.notify_one();
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu);
    if (closed) return;
    closed = true;
    // Wakes both: a read returns its end, a blocked send its error.
    ::shutdown(fd.get(), SHUT_RDWR);
    cv.notify_all();
  }

 private:
  void Write() {
    for (;;) {
      std::string out;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return closed || !queue.empty(); });
        if (closed) return;
        if (dropped > 0) {
          out = DumpJson(Json{{"ev", "line"},
                              {"text", "(" + std::to_string(dropped) +
                                           " events dropped: this terminal did not keep up with the team)"}}) +
                "\n";
          dropped = 0;
        }
        out += queue.front();
        queued -= queue.front().size();
        queue.pop_front();
      }
      if (!SendAllTo(fd.get(), out)) return;
    }
  }
  void Read() {
    SocketLines lines(fd.get());
    std::string line;
    while (lines.Next(&line, kMaxLineBytes, std::nullopt) == SocketLines::Got::kLine) {
      const std::string said = Handle(line);
      if (!said.empty()) Put(DumpJson(Json{{"ev", "line"}, {"text", said}}) + "\n");
    }
  }
  // What a terminal's line did, in words.
  std::string Handle(const std::string& line) {
    auto j = ParseJson(line);
    if (!j.ok() || !j->is_object()) return "not understood: a line is one JSON object";
    if (j->contains("say")) {
      auto text = JsonString(*j, "say", true);
      if (!text.ok()) return "not sent: " + text.status().message();
      Status s = actions.say(*text);
      return s.ok() ? "" : "not sent: " + s.message();
    }
    if (j->contains("interrupt")) {
      auto r = actions.interrupt();
      return r.ok() ? *r : r.status().message();
    }
    return "not understood: say or interrupt";
  }

 public:
  ScopedFd fd;
  const AttachActions actions;
  std::thread reader, writer;

 private:
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> queue;  // guarded by mu
  size_t queued = 0;              // bytes in queue, guarded by mu
  size_t dropped = 0;             // events not queued since the last write, guarded by mu
  bool closed = false;            // guarded by mu
  std::atomic<bool> reading_done{false}, writing_done{false};
};

AttachHub::AttachHub(agent::AgentEvents* inner, std::function<void(const std::string&)> say)
    : inner_(inner), say_(std::move(say)) {}

AttachHub::~AttachHub() { DetachAll(); }

void AttachHub::DetachAll() {
  std::list<std::unique_ptr<Session>> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gone.swap(sessions_);
  }
  gone.clear();  // each closes and joins its threads
}

void AttachHub::ReapLocked() {
  sessions_.remove_if([](const std::unique_ptr<Session>& s) { return s->done(); });
}

size_t AttachHub::attached() {
  std::lock_guard<std::mutex> lock(mu_);
  ReapLocked();
  return sessions_.size();
}

Status AttachHub::Attach(ScopedFd& conn, const std::string& hello, AttachActions actions) {
  std::lock_guard<std::mutex> lock(mu_);
  ReapLocked();
  if (sessions_.size() >= kMaxAttached) {
    return Status::FailedPrecondition(std::to_string(kMaxAttached) +
                                      " terminals are attached to this host already: detach one first");
  }
  auto s = std::make_unique<Session>(std::move(conn), std::move(actions));
  s->Start(DumpJson(Json{{"ok", true}, {"said", hello}}) + "\n");
  sessions_.push_back(std::move(s));
  return Status::Ok();
}

void AttachHub::Send(const Json& event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sessions_.empty()) return;
  const std::string line = DumpJson(event) + "\n";
  for (auto& s : sessions_) s->Put(line);
}

void AttachHub::Say(const std::string& text) {
  say_(text);
  Send({{"ev", "line"}, {"text", text}});
}

void AttachHub::OnText(const std::string& agent, std::string_view delta) {
  if (inner_ != nullptr) inner_->OnText(agent, delta);
  std::string whole;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::string& part = partial_[agent];
    part.append(delta);
    size_t n = WholeUtf8(part);
    whole = part.substr(0, n);
    part.erase(0, n);
  }
  if (!whole.empty()) Send({{"ev", "text"}, {"agent", agent}, {"text", whole}});
}

void AttachHub::OnTextEnd(const std::string& agent) {
  if (inner_ != nullptr) inner_->OnTextEnd(agent);
  std::string rest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    rest = std::move(partial_[agent]);
    partial_.erase(agent);
  }
  if (!rest.empty()) Send({{"ev", "text"}, {"agent", agent}, {"text", rest}});
  Send({{"ev", "text_end"}, {"agent", agent}});
}

void AttachHub::OnToolCall(const std::string& agent, const llm::ContentBlock& call) {
  if (inner_ != nullptr) inner_->OnToolCall(agent, call);
  Send({{"ev", "tool_call"}, {"agent", agent}, {"call", (agent::DescribeCall(call))}});
}

void AttachHub::OnToolResult(const std::string& agent, const llm::ContentBlock& call,
                             const tools::ToolResult& result) {
  if (inner_ != nullptr) inner_->OnToolResult(agent, call, result);
  Send({{"ev", "tool_result"},
        {"agent", agent},
        {"call", (agent::DescribeCall(call))},
        {"result", (CutUtf8(result.content, kResultBytes))},
        {"error", result.is_error}});
}

void AttachHub::OnMessages(const std::string& agent, const std::vector<Message>& delivered) {
  if (inner_ != nullptr) inner_->OnMessages(agent, delivered);
  for (const Message& m : delivered) {
    Send({{"ev", "message"},
          {"agent", agent},
          {"from", m.sender},
          {"type", std::string(MessageTypeName(m.type))},
          {"about", (m.summary.empty() ? CutUtf8(m.content, kResultBytes) : m.summary)}});
  }
}

void AttachHub::OnRetry(const std::string& agent, int attempt, const Status& why, double delay_s) {
  if (inner_ != nullptr) inner_->OnRetry(agent, attempt, why, delay_s);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", delay_s);
  Send({{"ev", "line"},
        {"agent", agent},
        {"text", ("↻ retry " + std::to_string(attempt) + " in " + buf + " s: " + why.message())}});
}

void AttachHub::OnCompact(const std::string& agent, int64_t before, int64_t after, const std::string& transcript) {
  if (inner_ != nullptr) inner_->OnCompact(agent, before, after, transcript);
  Send({{"ev", "line"},
        {"agent", agent},
        {"text", "⧉ context compacted: ~" + std::to_string(before) + " → ~" + std::to_string(after) + " tokens"}});
}

void AttachHub::OnNotice(const std::string& agent, const std::string& text) {
  if (inner_ != nullptr) inner_->OnNotice(agent, text);
  Send({{"ev", "line"}, {"agent", agent}, {"text", ("! " + text)}});
}

}  // namespace mates::host
