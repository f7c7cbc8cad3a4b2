#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "llm/http.h"

namespace mates::llm {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CallState {
  HttpResponse response;
  // An exception in a callback must not unwind through curl's C frames: it
  // is caught there, the transfer stops, and it is said here.
  std::string callback_error;
  const std::function<bool(std::string_view)>* on_data = nullptr;
  const std::function<void(int)>* on_headers = nullptr;
  const std::atomic<bool>* cancel = nullptr;
  const std::function<bool()>* give_up = nullptr;
  bool gave_up = false;
  bool stopped_by_caller = false;
  size_t error_body_cap = 1 << 20;
};

size_t OnHeaderUnguarded(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<CallState*>(user);
  std::string_view line(data, size * n);
  if (line == "\r\n" || line == "\n") {
    // The end of a header block: the final one unless it was 1xx.
    if (st->response.status >= 200 && st->on_headers != nullptr && *st->on_headers) (*st->on_headers)(st->response.status);
    return size * n;
  }
  if (line.rfind("HTTP/", 0) == 0) {
    // A new status line (after 100 Continue or a redirect): start over.
    st->response.headers.clear();
    size_t sp = line.find(' ');
    st->response.status = sp == std::string_view::npos ? 0 : std::atoi(std::string(line.substr(sp + 1, 3)).c_str());
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
      value.remove_suffix(1);
    }
    st->response.headers[name] = std::string(value);
  }
  return size * n;
}

size_t OnBodyUnguarded(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<CallState*>(user);
  std::string_view chunk(data, size * n);
  if (st->response.status >= 200 && st->response.status < 300 && st->on_data != nullptr &&
      *st->on_data) {
    if (!(*st->on_data)(chunk)) {
      st->stopped_by_caller = true;
      return 0;  // makes curl stop with CURLE_WRITE_ERROR
    }
    return chunk.size();
  }
  if (st->response.body.size() < st->error_body_cap) st->response.body.append(chunk);
  return chunk.size();
}

// The callbacks curl calls: never let an exception through (returning 0
// makes curl end the transfer with a write error).
template <size_t (*F)(char*, size_t, size_t, void*)>
size_t Guarded(char* data, size_t size, size_t n, void* user) noexcept {
  try {
    return F(data, size, n, user);
  } catch (const std::exception& e) {
    static_cast<CallState*>(user)->callback_error = e.what();
  } catch (...) {
    static_cast<CallState*>(user)->callback_error = "unknown exception";
  }
  return 0;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) noexcept {
  return Guarded<OnHeaderUnguarded>(data, size, n, user);
}

size_t OnBody(char* data, size_t size, size_t n, void* user) noexcept {
  return Guarded<OnBodyUnguarded>(data, size, n, user);
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) noexcept {
  auto* st = static_cast<CallState*>(user);
  if (st->cancel != nullptr && st->cancel->load()) return 1;
  if (st->give_up != nullptr && *st->give_up && (*st->give_up)()) {
    st->gave_up = true;
    return 1;
  }
  return 0;
}

// What a transfer that failed with `rc` (not cancelled, not given up)
// comes to: a connection not made or dropped is Unavailable (retried), a
// bad URL InvalidArgument.
Status FailureOf(CURLcode rc, const HttpRequest& request) {
  std::string what = curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return Status::Unavailable("cannot connect to " + request.url + ": " + what);
    case CURLE_OPERATION_TIMEDOUT:
      if (request.total_timeout_s > 0) {
        return Status::Unavailable("no complete reply from " + request.url + " within the request timeout (" +
                                   std::to_string(request.total_timeout_s) + " s): " + what);
      }
      return Status::Unavailable("no data from " + request.url + " for too long: " + what);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return Status::InvalidArgument("bad URL '" + request.url + "': " + what);
    default:
      // Connection reset, closed mid-response, TLS failure…: transient.
      return Status::Unavailable("connection to " + request.url + " failed: " + what);
  }
}

class CurlTransport : public HttpTransport {
 public:
  CurlTransport() { GlobalInit(); }
  ~CurlTransport() override {
    for (CURL* h : pool_) curl_easy_cleanup(h);
  }

  Result<HttpResponse> Send(const HttpRequest& request,
                            const std::function<bool(std::string_view)>& on_data,
                            const std::atomic<bool>* cancel) override {
    CURL* h = Take();
    if (h == nullptr) return Status::Internal("curl_easy_init failed");
    CallState st;
    st.on_data = &on_data;
    st.on_headers = &request.on_headers;
    st.cancel = cancel;
    st.give_up = &request.give_up;
    curl_slist* headers = nullptr;
    for (const auto& hd : request.headers) headers = curl_slist_append(headers, hd.c_str());
    // No "Expect: 100-continue" round trip for large bodies.
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    if (request.method == "GET") {
      curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else if (request.method == "POST") {
      curl_easy_setopt(h, CURLOPT_POST, 1L);
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    } else if (request.method == "DELETE") {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    } else {
      curl_easy_reset(h);
      Give(h);
      curl_slist_free_all(headers);
      return Status::InvalidArgument("HTTP method " + request.method + " is not sent");
    }
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &OnHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &st);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &OnBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &OnProgress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &st);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, request.low_speed_bytes);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, request.low_speed_time_s);
    if (request.total_timeout_s > 0) {
      curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.total_timeout_s * 1000));
    }
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    CURLcode rc = curl_easy_perform(h);
    curl_slist_free_all(headers);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (code != 0) st.response.status = static_cast<int>(code);
    curl_easy_reset(h);
    Give(h);

    if (!st.callback_error.empty()) {
      return Status::Internal("reading the reply from " + request.url + " failed: " + st.callback_error);
    }
    if (rc == CURLE_OK) return std::move(st.response);
    if (cancel != nullptr && cancel->load()) return Status::Cancelled("request cancelled");
    if (st.gave_up) return Status::Timeout("no complete reply from " + request.url + " in time");
    if (st.stopped_by_caller) return std::move(st.response);
    return FailureOf(rc, request);
  }

 private:
  CURL* Take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!pool_.empty()) {
        CURL* h = pool_.back();
        pool_.pop_back();
        return h;
      }
    }
    return curl_easy_init();
  }
  void Give(CURL* h) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pool_.size() < 16) {
      pool_.push_back(h);
    } else {
      curl_easy_cleanup(h);
    }
  }

  std::mutex mu_;
  std::vector<CURL*> pool_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<HttpTransport> NewCurlTransport() { return std::make_unique<CurlTransport>(); }

}  // namespace mates::llm
