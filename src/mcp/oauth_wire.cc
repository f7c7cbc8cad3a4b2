// See oauth_wire.h.
#include "mcp/oauth_wire.h"

#include <curl/curl.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/secrets.h"
#include "core/text.h"

namespace mates::mcp::oauth {
namespace {

// What any one metadata document, registration or token answer may be.
constexpr size_t kMaxAnswerBytes = 256 << 10;
constexpr double kRequestTimeoutS = 30;

// application/x-www-form-urlencoded, as RFC 6749 appendix B has it.
std::string FormEncode(std::string_view s) { return PercentEncode(s); }

}  // namespace

std::string Base64(std::string_view in, bool url) {
  static const char* const kStd = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static const char* const kUrl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const char* abc = url ? kUrl : kStd;
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {abc[n >> 18], abc[(n >> 12) & 63], abc[(n >> 6) & 63], abc[n & 63]};
  }
  if (i + 1 == in.size()) {
    const uint32_t n = uint8_t(in[i]) << 16;
    out += {abc[n >> 18], abc[(n >> 12) & 63]};
    if (!url) out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t n = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {abc[n >> 18], abc[(n >> 12) & 63], abc[(n >> 6) & 63]};
    if (!url) out += "=";
  }
  return out;
}

std::string Form(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (v.empty()) continue;
    out += (out.empty() ? "" : "&") + FormEncode(k) + "=" + FormEncode(v);
  }
  return out;
}

Result<UrlParts> SplitUrl(const std::string& url) {
  CURLU* u = curl_url();
  if (u == nullptr) return Status::Internal("curl_url");
  UrlParts out;
  bool ok = curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK;
  auto part = [&](CURLUPart what, std::string* into) {
    char* got = nullptr;
    if (curl_url_get(u, what, &got, 0) != CURLUE_OK) return false;
    *into = got;
    curl_free(got);
    return true;
  };
  std::string scheme, host, port, path;
  ok = ok && part(CURLUPART_SCHEME, &scheme) && part(CURLUPART_HOST, &host) && part(CURLUPART_PATH, &path);
  if (ok) part(CURLUPART_PORT, &port);
  curl_url_cleanup(u);
  if (!ok || (scheme != "http" && scheme != "https")) {
    return Status::InvalidArgument("not an http(s) URL: '" + url.substr(0, 200) + "'");
  }
  out.origin = scheme + "://" + host + (port.empty() ? "" : ":" + port);
  while (!path.empty() && path.back() == '/') path.pop_back();
  out.path = path;
  return out;
}

// OAuth 2.1 §1.5: every endpoint over TLS, but for this machine's own.
// (It also keeps what the person's browser is given a URL.)
Status Secure(const std::string& url, const std::string& what) {
  MATES_ASSIGN_OR_RETURN(UrlParts parts, SplitUrl(url));
  if (parts.origin.rfind("https://", 0) == 0) return Status::Ok();
  const std::string host = parts.origin.substr(7, parts.origin.rfind(':') > 6 ? parts.origin.rfind(':') - 7 : std::string::npos);
  if (host == "127.0.0.1" || host == "localhost" || host == "[::1]") return Status::Ok();
  return Status::FailedPrecondition(what + " " + url.substr(0, 200) +
                                    " is plain http on another machine; mates sends tokens and codes over https only");
}

// Whether the protected resource `named` (from its metadata) covers the
// server at `url`: the same origin, and its path is the server's or a
// parent of it ("http://h" covers "http://h/mcp"; "http://h/m" does not
// cover "http://h/mcp").
bool Covers(const std::string& named, const std::string& url) {
  auto n = SplitUrl(named);
  auto u = SplitUrl(url);
  if (!n.ok() || !u.ok() || n->origin != u->origin) return false;
  return u->path.rfind(n->path, 0) == 0 && (u->path.size() == n->path.size() || u->path[n->path.size()] == '/');
}


Result<Answer> Exchange(llm::HttpRequest req) {
  static llm::HttpTransport* const http = llm::NewCurlTransport().release();  // for the process's life
  req.total_timeout_s = kRequestTimeoutS;
  Answer a;
  bool too_big = false;
  auto r = http->Send(
      req,
      [&](std::string_view bytes) {
        if (a.body.size() + bytes.size() > kMaxAnswerBytes) {
          too_big = true;
          return false;
        }
        a.body.append(bytes);
        return true;
      },
      nullptr);
  if (!r.ok()) return r.status().WithContext(req.method + " " + req.url);
  if (too_big || r->body.size() > kMaxAnswerBytes) {
    return Status::InvalidArgument(req.method + " " + req.url + ": the answer is over " +
                                   std::to_string(kMaxAnswerBytes >> 10) + " KiB");
  }
  a.status = r->status;
  a.headers = r->headers;
  if (a.body.empty()) a.body = r->body;
  if (auto j = ParseJson(a.body); j.ok() && j->is_object()) a.json = std::move(*j);
  return a;
}

// The first of `urls` that answers 200 with a JSON object (nullopt: none
// did); a failure to connect is an error.
Result<std::optional<std::pair<std::string, Json>>> FirstDocument(const std::vector<std::string>& urls) {
  for (const auto& url : urls) {
    llm::HttpRequest req;
    req.method = "GET";
    req.url = url;
    req.headers = {"Accept: application/json", "MCP-Protocol-Version: 2025-11-25"};
    MATES_ASSIGN_OR_RETURN(Answer a, Exchange(std::move(req)));
    if (a.status == 200 && a.json.is_object()) return std::optional(std::make_pair(url, std::move(a.json)));
  }
  return std::optional<std::pair<std::string, Json>>();
}

std::string Str(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::vector<std::string> Strings(const Json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.is_object() || !j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) {
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  }
  return out;
}

std::string Joined(const std::vector<std::string>& words) { return JoinWords(words, " "); }

int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

// From now on `value` (a token, a client secret) is redacted from
// everything mates writes or shows.
void Redacted(const std::string& value) {
  if (!value.empty()) Secrets::Add("mcp oauth " + value, value);
}

// The token endpoint's answer, as a grant (`g` has what it had before).
Result<Grant> ReadTokens(const Answer& a, Grant g, const std::string& what) {
  if (a.status != 200) {
    std::string err = Str(a.json, "error");
    std::string desc = Str(a.json, "error_description");
    return Status::FailedPrecondition(what + ": the token endpoint answered HTTP " + std::to_string(a.status) +
                                      (err.empty() ? "" : " (" + err + (desc.empty() ? "" : ": " + desc) + ")"));
  }
  std::string access = Str(a.json, "access_token");
  std::string type = Str(a.json, "token_type");
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  if (access.empty()) return Status::FailedPrecondition(what + ": the token endpoint sent no access_token");
  if (type != "bearer") {
    return Status::FailedPrecondition(what + ": the token endpoint sent a token of type '" + type.substr(0, 40) +
                                      "', not Bearer");
  }
  g.access_token = access;
  if (std::string refresh = Str(a.json, "refresh_token"); !refresh.empty()) g.refresh_token = refresh;
  if (std::string scope = Str(a.json, "scope"); !scope.empty()) g.scope = scope;
  g.expires_at = a.json.contains("expires_in") && a.json["expires_in"].is_number() &&
                         a.json["expires_in"].get<double>() > 0
                     ? Now() + static_cast<int64_t>(a.json["expires_in"].get<double>())
                     : 0;
  Redacted(g.access_token);
  Redacted(g.refresh_token);
  return g;
}

// POSTs `fields` to the token endpoint, the client authenticated as `g`
// says.
Result<Answer> TokenRequest(const Grant& g, std::vector<std::pair<std::string, std::string>> fields) {
  llm::HttpRequest req;
  req.url = g.token_endpoint;
  req.headers = {"Content-Type: application/x-www-form-urlencoded", "Accept: application/json"};
  if (g.auth_method == "private_key_jwt") {
    MATES_ASSIGN_OR_RETURN(std::string assertion, ClientAssertion(g.client_id, g.issuer, g.client_key_file));
    fields.emplace_back("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
    fields.emplace_back("client_assertion", assertion);
  } else if (g.auth_method == "client_secret_basic") {
    req.headers.push_back("Authorization: Basic " +
                          Base64(FormEncode(g.client_id) + ":" + FormEncode(g.client_secret), /*url=*/false));
  } else {
    fields.emplace_back("client_id", g.client_id);
    if (g.auth_method == "client_secret_post") fields.emplace_back("client_secret", g.client_secret);
  }
  req.body = Form(fields);
  return Exchange(std::move(req));
}

// What a request without a token is told (the challenge), for a login
// started with none; `open` is set when the server let it in.
Result<Challenge> Probe(const std::string& resource, bool* open) {
  llm::HttpRequest req;
  req.url = resource;
  req.headers = {"Content-Type: application/json", "Accept: application/json, text/event-stream"};
  req.body = DumpJson(Json{{"jsonrpc", "2.0"},
                           {"id", 1},
                           {"method", "initialize"},
                           {"params",
                            {{"protocolVersion", "2025-11-25"},
                             {"capabilities", Json::object()},
                             {"clientInfo", {{"name", "mates"}, {"version", MATES_VERSION}}}}}});
  MATES_ASSIGN_OR_RETURN(Answer a, Exchange(std::move(req)));
  if (a.status == 401 || a.status == 403) {
    auto h = a.headers.find("www-authenticate");
    return h == a.headers.end() ? Challenge{} : ParseChallenge(h->second);
  }
  if (a.status >= 200 && a.status < 300) {
    // It lets us in; its tools may still want a token (its metadata says).
    *open = true;
    return Challenge{};
  }
  return Status::Unavailable(resource + " answered HTTP " + std::to_string(a.status));
}

Status Callback::Open(int port) {
  server_.Get("/callback", [this](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ || req.get_param_value("state") != state_) {
      res.status = 400;
      res.set_content("mates: this is not the login mates is waiting for.\n", "text/plain; charset=utf-8");
      return;
    }
    code_ = req.get_param_value("code");
    error_ = req.get_param_value("error");
    if (error_.empty() && code_.empty()) error_ = "no code";
    std::string desc = req.get_param_value("error_description");
    if (!desc.empty()) error_ += ": " + desc;
    done_ = true;
    cv_.notify_all();
    res.set_content(error_.empty() ? "mates: you are logged in; you may close this tab.\n"
                                   : "mates: the login failed (" + error_ + ").\n",
                    "text/plain; charset=utf-8");
  });
  port_ = port == 0 ? server_.bind_to_any_port("127.0.0.1") : (server_.bind_to_port("127.0.0.1", port) ? port : -1);
  if (port_ <= 0) {
    return Status::Unavailable("cannot listen on 127.0.0.1:" + std::to_string(port) + " for the login's redirect");
  }
  thread_ = std::thread([this] { server_.listen_after_bind(); });
  return Status::Ok();
}

Callback::~Callback() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

void Callback::Expect(std::string state) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = std::move(state);
}

Result<std::string> Callback::Wait(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return done_; })) {
    return Status::Timeout("nobody came back from the login page within " +
                           std::to_string(static_cast<long>(timeout_s)) + " s");
  }
  if (!error_.empty()) return Status::FailedPrecondition("the authorization server said: " + error_.substr(0, 300));
  return code_;
}

}  // namespace mates::mcp::oauth
