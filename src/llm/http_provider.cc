// See http_provider.h.
#include "llm/http_provider.h"

#include <nlohmann/json.hpp>

namespace mates::llm {

HttpProvider::HttpProvider(HttpProviderOptions options, std::unique_ptr<HttpTransport> transport)
    : options_(WithSharedBackoff(std::move(options))), transport_(std::move(transport)) {}

Result<Response> HttpProvider::Complete(const Request& request, const StreamCallbacks& callbacks,
                                        CancelToken* cancel) {
  const std::string model = request.model.empty() ? options_.model : request.model;
  HttpRequest http;
  std::string base = options_.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  http.url = base + Endpoint(model);
  http.body = Body(request, model);
  http.connect_timeout_s = options_.connect_timeout_s;
  http.total_timeout_s = options_.request_timeout_s;
  http.low_speed_time_s = options_.stream ? options_.stall_timeout_s : kWholeReplyStallS;
  http.headers = {"content-type: application/json"};
  for (auto& h : Headers(request)) http.headers.push_back(std::move(h));
  TextDeduper text(callbacks.on_text);
  return RunWithRetries(options_.retry, callbacks, cancel, [&](AttemptFailure* failure) {
    text.NewAttempt();
    return Attempt(http, &text, cancel, failure);
  });
}

Result<Response> HttpProvider::Attempt(const HttpRequest& http, TextDeduper* text, CancelToken* cancel,
                                       AttemptFailure* failure) {
  std::unique_ptr<StreamReader> reader = Reader(text);
  SseParser sse([&](const SseEvent& e) { reader->OnEvent(e); });
  auto j = PostAttempt(*transport_, http, options_.stream,
                       [&](std::string_view chunk) {
                         sse.Feed(chunk);
                         // An error event, or a reply that broke its shape, ends this attempt.
                         return !reader->failed() && !sse.overflowed();
                       },
                       cancel, failure);
  if (!j.ok()) return j.status();
  if (!options_.stream) {
    auto r = WholeReply(*j);
    if (!r.ok()) {
      *failure = AttemptFailure{r.status(), false, {}};
      return r.status();
    }
    if (text != nullptr) text->Text(r->Text());
    return r;
  }
  if (Status f = StreamFailure(sse.overflowed(), reader->malformed(), reader->error(), failure); !f.ok()) return f;
  if (!reader->complete()) {
    failure->status = Status::Unavailable("the stream ended before " + std::string(StreamEnd()));
    failure->retryable = true;
    return failure->status;
  }
  auto r = reader->Take();
  if (!r.ok()) failure->status = r.status();
  return r;
}

}  // namespace mates::llm
