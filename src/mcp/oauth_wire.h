// The HTTP side of mates' OAuth client (mcp/oauth.h): bounded exchanges
// with metadata, registration and token endpoints, reading their JSON,
// the token request as a client authenticates, and the redirect's
// listener. Only oauth*.cc include it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "llm/http.h"
#include "llm/http_server.h"
#include "mcp/oauth.h"

namespace mates::mcp::oauth {

std::string Base64(std::string_view in, bool url);
// application/x-www-form-urlencoded, as RFC 6749 appendix B has it; empty
// values are left out.
std::string Form(const std::vector<std::pair<std::string, std::string>>& fields);

// A URL's scheme://host[:port] and its path ("" for "/"), with libcurl's
// parser; InvalidArgument if it is not an http(s) URL.
struct UrlParts {
  std::string origin, path;
};
Result<UrlParts> SplitUrl(const std::string& url);
// OAuth 2.1 §1.5: every endpoint over TLS, but for this machine's own.
// (It also keeps what the person's browser is given a URL.)
Status Secure(const std::string& url, const std::string& what);
// Whether the protected resource `named` (from its metadata) covers the
// server at `url`: the same origin, and its path is the server's or a
// parent of it ("http://h" covers "http://h/mcp"; "http://h/m" does not
// cover "http://h/mcp").
bool Covers(const std::string& named, const std::string& url);

// An endpoint's answer, its body at most 256 KiB.
struct Answer {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  Json json;  // the body, if it is a JSON object; else null
};
Result<Answer> Exchange(llm::HttpRequest req);
// The first of `urls` that answers 200 with a JSON object (nullopt: none
// did); a failure to connect is an error.
Result<std::optional<std::pair<std::string, Json>>> FirstDocument(const std::vector<std::string>& urls);

// A string member of `j` ("" if it is none), a string array's strings.
std::string Str(const Json& j, const char* key);
std::vector<std::string> Strings(const Json& j, const char* key);
// A scope's words, each once; and back.
std::vector<std::string> Words(const std::string& s);
std::string Joined(const std::vector<std::string>& words);
int64_t Now();
// From now on `value` (a token, a client secret) is redacted from
// everything mates writes or shows.
void Redacted(const std::string& value);

// The token endpoint's answer, as a grant (`g` has what it had before).
Result<Grant> ReadTokens(const Answer& a, Grant g, const std::string& what);
// POSTs `fields` to the token endpoint, the client authenticated as `g`
// says.
Result<Answer> TokenRequest(const Grant& g, std::vector<std::pair<std::string, std::string>> fields);
// What a request without a token is told (the challenge), for a login
// started with none; `open` is set when the server let it in.
Result<Challenge> Probe(const std::string& resource, bool* open);

// The redirect's listener on 127.0.0.1: takes the one answer that
// carries our state. Behind the front door (llm/http_server.h): a head is
// bounded, and a browser that leaves mid-answer is an error on a write,
// not a SIGPIPE that ends `mates mcp login`.
class Callback {
 public:
  Callback() = default;
  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;
  ~Callback();
  Status Open(int port);
  std::string redirect_uri() const { return "http://127.0.0.1:" + std::to_string(port_) + "/callback"; }
  void Expect(std::string state);
  // The code, once the person is back.
  Result<std::string> Wait(double timeout_s);

 private:
  llm::HttpServer server_{llm::FrontDoorLimits{.workers = 2}};
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string state_, code_, error_;  // guarded by mu_
  bool done_ = false;                 // guarded by mu_
};

}  // namespace mates::mcp::oauth
