// See oauth.h.
#include "mcp/oauth.h"

#include <curl/curl.h>
#include <httplib.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/random.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "core/file_lock.h"
#include "core/files.h"
#include "core/json.h"
#include "core/log.h"
#include "core/secrets.h"
#include "core/text.h"
#include "llm/http.h"
#include "llm/http_server.h"

namespace mates::mcp::oauth {
namespace {

// What any one metadata document, registration or token answer may be.
constexpr size_t kMaxAnswerBytes = 256 << 10;
constexpr double kRequestTimeoutS = 30;

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

// application/x-www-form-urlencoded, as RFC 6749 appendix B has it.
std::string FormEncode(std::string_view s) { return PercentEncode(s); }

std::string Form(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (v.empty()) continue;
    out += (out.empty() ? "" : "&") + FormEncode(k) + "=" + FormEncode(v);
  }
  return out;
}

// A URL's scheme://host[:port] and its path ("" for "/"), with libcurl's
// parser; InvalidArgument if it is not an http(s) URL.
struct UrlParts {
  std::string origin, path;
};
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

struct Answer {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  Json json;  // the body, if it is a JSON object; else null
};

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

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

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

// The redirect's listener on 127.0.0.1: takes the one answer that
// carries our state. Behind the front door (llm/http_server.h): a head is
// bounded, and a browser that leaves mid-answer is an error on a write,
// not a SIGPIPE that ends `mates mcp login`.
class Callback {
 public:
  Status Open(int port) {
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
  ~Callback() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string redirect_uri() const { return "http://127.0.0.1:" + std::to_string(port_) + "/callback"; }
  void Expect(std::string state) {
    std::lock_guard<std::mutex> lock(mu_);
    state_ = std::move(state);
  }
  // The code, once the person is back.
  Result<std::string> Wait(double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return done_; })) {
      return Status::Timeout("nobody came back from the login page within " +
                             std::to_string(static_cast<long>(timeout_s)) + " s");
    }
    if (!error_.empty()) return Status::FailedPrecondition("the authorization server said: " + error_.substr(0, 300));
    return code_;
  }

 private:
  llm::HttpServer server_{llm::FrontDoorLimits{.workers = 2}};
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string state_, code_, error_;  // guarded by mu_
  bool done_ = false;                 // guarded by mu_
};

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
                             {"clientInfo", {{"name", "mates"}, {"version", "0.1.0"}}}}}});
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

}  // namespace

Challenge ParseChallenge(std::string_view h) {
  Challenge c;
  // Schemes and their parameters: `Bearer a="b", c=d, Basic realm="x"`.
  size_t i = 0;
  bool bearer = false;
  auto skip = [&] {
    while (i < h.size() && (h[i] == ' ' || h[i] == '\t' || h[i] == ',')) ++i;
  };
  while (i < h.size()) {
    skip();
    size_t start = i;
    while (i < h.size() && h[i] != '=' && h[i] != ' ' && h[i] != ',' && h[i] != '\t') ++i;
    std::string token(h.substr(start, i - start));
    size_t after = i;
    while (after < h.size() && (h[after] == ' ' || h[after] == '\t')) ++after;
    if (after < h.size() && h[after] == '=' && !token.empty()) {
      // key=value or key="value"
      i = after + 1;
      while (i < h.size() && (h[i] == ' ' || h[i] == '\t')) ++i;
      std::string value;
      if (i < h.size() && h[i] == '"') {
        for (++i; i < h.size() && h[i] != '"'; ++i) {
          if (h[i] == '\\' && i + 1 < h.size()) ++i;
          value += h[i];
        }
        ++i;
      } else {
        while (i < h.size() && h[i] != ',' && h[i] != ' ' && h[i] != '\t') value += h[i++];
      }
      if (!bearer) continue;
      std::string key = token;
      std::transform(key.begin(), key.end(), key.begin(), [](unsigned char ch) { return std::tolower(ch); });
      if (key == "resource_metadata") c.resource_metadata = value;
      if (key == "scope") c.scope = value;
      if (key == "error") c.error = value;
    } else if (!token.empty()) {
      std::string scheme = token;
      std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char ch) { return std::tolower(ch); });
      if (bearer && scheme != "bearer") break;  // the next scheme's
      bearer = scheme == "bearer";
    } else {
      ++i;
    }
  }
  return c;
}

std::string PkceChallenge(std::string_view verifier) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(verifier.data(), verifier.size(), digest, &len, EVP_sha256(), nullptr) != 1) return "";
  return Base64(std::string_view(reinterpret_cast<const char*>(digest), len), /*url=*/true);
}

std::string RandomToken(size_t bytes) {
  std::string raw(bytes, '\0');
  for (size_t got = 0; got < bytes;) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  return Base64(raw, /*url=*/true);
}

std::vector<std::string> ResourceMetadataUrls(const std::string& resource, const Challenge& c) {
  std::vector<std::string> out;
  auto add = [&](const std::string& u) {
    if (std::find(out.begin(), out.end(), u) == out.end()) out.push_back(u);
  };
  if (!c.resource_metadata.empty()) add(c.resource_metadata);
  auto parts = SplitUrl(resource);
  if (!parts.ok()) return out;
  if (!parts->path.empty()) add(parts->origin + "/.well-known/oauth-protected-resource" + parts->path);
  add(parts->origin + "/.well-known/oauth-protected-resource");
  return out;
}

std::vector<std::string> AuthorizationServerMetadataUrls(const std::string& issuer) {
  auto parts = SplitUrl(issuer);
  if (!parts.ok()) return {};
  const std::string& o = parts->origin;
  const std::string& p = parts->path;
  if (p.empty()) return {o + "/.well-known/oauth-authorization-server", o + "/.well-known/openid-configuration"};
  return {o + "/.well-known/oauth-authorization-server" + p, o + "/.well-known/openid-configuration" + p,
          o + p + "/.well-known/openid-configuration"};
}

fs::path GrantStore::DefaultPath() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg != nullptr && xdg[0] == '/') return fs::path(xdg) / "mates" / "mcp-auth.json";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && home[0] != '\0' ? home : "/") / ".config" / "mates" / "mcp-auth.json";
}

namespace {

Json GrantToJson(const Grant& g) {
  Json j = Json::object();
  j["resource"] = g.resource;
  j["indicator"] = g.indicator;
  j["issuer"] = g.issuer;
  j["token_endpoint"] = g.token_endpoint;
  j["client_id"] = g.client_id;
  j["client_secret"] = g.client_secret;
  j["auth_method"] = g.auth_method;
  j["client_key_file"] = g.client_key_file;
  j["grant_type"] = g.grant_type;
  j["access_token"] = g.access_token;
  j["refresh_token"] = g.refresh_token;
  j["scope"] = g.scope;
  j["expires_at"] = g.expires_at;
  return j;
}

Grant GrantFromJson(const Json& j) {
  Grant g;
  g.resource = Str(j, "resource");
  g.indicator = Str(j, "indicator");
  if (g.indicator.empty()) g.indicator = g.resource;
  g.issuer = Str(j, "issuer");
  g.token_endpoint = Str(j, "token_endpoint");
  g.client_id = Str(j, "client_id");
  g.client_secret = Str(j, "client_secret");
  g.auth_method = Str(j, "auth_method");
  g.client_key_file = Str(j, "client_key_file");
  g.grant_type = Str(j, "grant_type");
  if (g.grant_type.empty()) g.grant_type = "authorization_code";
  g.access_token = Str(j, "access_token");
  g.refresh_token = Str(j, "refresh_token");
  g.scope = Str(j, "scope");
  g.expires_at = j.contains("expires_at") && j["expires_at"].is_number_integer() ? j["expires_at"].get<int64_t>() : 0;
  return g;
}

// The file's grants (none if it is missing); Corrupt if it cannot be read.
Result<Json> ReadGrants(const fs::path& file) {
  if (!fs::exists(file)) return Json::object();
  MATES_ASSIGN_OR_RETURN(std::string text, ReadFilePrefix(file, 4 << 20));
  auto j = ParseJson(text);
  if (!j.ok() || !j->is_object() || !j->contains("servers") || !(*j)["servers"].is_object()) {
    return Status::Corrupt(file.string() + " is not mates' MCP grants file; remove it and log in again");
  }
  return (*j)["servers"];
}

}  // namespace

Result<std::optional<Grant>> GrantStore::Load(const std::string& resource) const {
  MATES_ASSIGN_OR_RETURN(Json all, ReadGrants(file_));
  if (!all.contains(resource) || !all[resource].is_object()) return std::optional<Grant>();
  Grant g = GrantFromJson(all[resource]);
  Redacted(g.access_token);
  Redacted(g.refresh_token);
  Redacted(g.client_secret);
  return std::optional<Grant>(std::move(g));
}

Status GrantStore::Save(const Grant& g) const {
  MATES_RETURN_IF_ERROR(EnsureDir(file_.parent_path()));
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(fs::path(file_.string() + ".lock")));
  MATES_ASSIGN_OR_RETURN(Json all, ReadGrants(file_));
  all[g.resource] = GrantToJson(g);
  return WriteFileAtomic(file_, DumpJsonPretty(Json{{"servers", std::move(all)}}), 0600);
}

Result<bool> GrantStore::Forget(const std::string& resource) const {
  if (!fs::exists(file_)) return false;
  MATES_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(fs::path(file_.string() + ".lock")));
  MATES_ASSIGN_OR_RETURN(Json all, ReadGrants(file_));
  if (!all.contains(resource)) return false;
  all.erase(resource);
  MATES_RETURN_IF_ERROR(WriteFileAtomic(file_, DumpJsonPretty(Json{{"servers", std::move(all)}}), 0600));
  return true;
}

Result<Grant> Login(const std::string& resource, const Challenge& challenge, const LoginOptions& o) {
  MATES_ASSIGN_OR_RETURN(UrlParts server, SplitUrl(resource));
  MATES_RETURN_IF_ERROR(Secure(resource, "server"));
  Challenge c = challenge;
  bool open = false;
  if (c.resource_metadata.empty() && c.scope.empty()) {
    MATES_ASSIGN_OR_RETURN(c, Probe(resource, &open));
  }
  // 1. The resource's metadata, naming its authorization server.
  MATES_ASSIGN_OR_RETURN(auto prm, FirstDocument(ResourceMetadataUrls(resource, c)));
  if (open && !prm) return Status::FailedPrecondition("server " + resource + " lets mates in without a login");
  Grant g;
  g.resource = resource;
  g.indicator = resource;
  std::vector<std::string> resource_scopes;
  const bool legacy = !prm.has_value();
  if (prm) {
    const Json& doc = prm->second;
    const std::string named = Str(doc, "resource");
    if (named.empty() || !Covers(named, resource)) {
      return Status::FailedPrecondition("the metadata at " + prm->first + " is for resource '" + named.substr(0, 200) +
                                        "', not " + resource + ": mates sends that server no token");
    }
    auto servers = Strings(doc, "authorization_servers");
    if (servers.empty()) {
      return Status::FailedPrecondition("the metadata at " + prm->first + " names no authorization server");
    }
    g.issuer = servers.front();
    g.indicator = named;
    resource_scopes = Strings(doc, "scopes_supported");
  } else {
    g.issuer = server.origin;  // MCP 2025-03-26: the server's origin
  }
  // 2. The authorization server's metadata.
  MATES_ASSIGN_OR_RETURN(auto as_doc, FirstDocument(AuthorizationServerMetadataUrls(g.issuer)));
  Json as = as_doc ? as_doc->second : Json::object();
  std::string authorize = Str(as, "authorization_endpoint");
  g.token_endpoint = Str(as, "token_endpoint");
  std::string registration = Str(as, "registration_endpoint");
  if (!as_doc) {
    if (!legacy) {
      return Status::FailedPrecondition("authorization server " + g.issuer + " publishes no metadata (tried " +
                                        AuthorizationServerMetadataUrls(g.issuer).front() + " and the others)");
    }
    MATES_ASSIGN_OR_RETURN(UrlParts issuer, SplitUrl(g.issuer));
    authorize = issuer.origin + "/authorize";
    g.token_endpoint = issuer.origin + "/token";
    registration = issuer.origin + "/register";
  } else {
    auto methods = Strings(as, "code_challenge_methods_supported");
    if (std::find(methods.begin(), methods.end(), "S256") == methods.end()) {
      return Status::FailedPrecondition("authorization server " + g.issuer +
                                        " does not say it supports PKCE with S256; mates will not log in without it");
    }
  }
  if (authorize.empty() || g.token_endpoint.empty()) {
    return Status::FailedPrecondition("authorization server " + g.issuer + " names no authorization or token endpoint");
  }
  MATES_RETURN_IF_ERROR(Secure(authorize, "the authorization endpoint"));
  MATES_RETURN_IF_ERROR(Secure(g.token_endpoint, "the token endpoint"));
  if (!registration.empty()) MATES_RETURN_IF_ERROR(Secure(registration, "the registration endpoint"));
  const auto auth_methods = Strings(as, "token_endpoint_auth_methods_supported");
  auto supports = [&](const char* m) {
    return std::find(auth_methods.begin(), auth_methods.end(), m) != auth_methods.end();
  };
  auto preregistered = [&] {
    g.client_id = o.client_id;
    g.client_secret = o.client_secret;
    Redacted(g.client_secret);
    g.auth_method = g.client_secret.empty()                                   ? "none"
                    : supports("client_secret_basic") || auth_methods.empty() ? "client_secret_basic"
                    : supports("client_secret_post")                          ? "client_secret_post"
                                                                              : "client_secret_basic";
  };
  // A machine's login (the client_credentials grant, SEP-1046): asked
  // for, or the only grant a server that takes our secret has.
  const auto grants = Strings(as, "grant_types_supported");
  auto grants_has = [&](const char* t) { return std::find(grants.begin(), grants.end(), t) != grants.end(); };
  const bool has_key = !o.client_secret.empty() || !o.client_key_file.empty();
  if (o.client_credentials || (has_key && grants_has("client_credentials") && !grants_has("authorization_code"))) {
    if (o.client_id.empty() || !has_key) {
      return Status::InvalidArgument(
          "a machine's login (client_credentials) needs --client-id and --client-secret or --client-key");
    }
    preregistered();
    if (!o.client_key_file.empty()) {
      g.auth_method = "private_key_jwt";
      g.client_key_file = fs::absolute(o.client_key_file).string();
    }
    g.grant_type = "client_credentials";
    g.scope = Joined(Words(!c.scope.empty() ? c.scope + " " + o.scope : Joined(resource_scopes) + " " + o.scope));
    MATES_ASSIGN_OR_RETURN(Answer a, TokenRequest(g, {{"grant_type", "client_credentials"},
                                                      {"scope", g.scope},
                                                      {"resource", g.indicator}}));
    return ReadTokens(a, std::move(g), "logging in to " + resource);
  }
  // The redirect's listener first: its URL is part of the registration.
  Callback callback;
  MATES_RETURN_IF_ERROR(callback.Open(o.callback_port));
  // 3. A client.
  if (!o.client_id.empty()) {
    preregistered();
  } else if (!o.client_metadata_url.empty() && as.contains("client_id_metadata_document_supported") &&
             as["client_id_metadata_document_supported"] == true) {
    g.client_id = o.client_metadata_url;
    g.auth_method = "none";
  } else if (!registration.empty()) {
    llm::HttpRequest req;
    req.url = registration;
    req.headers = {"Content-Type: application/json", "Accept: application/json"};
    req.body = DumpJson(Json{{"client_name", "mates"},
                             {"redirect_uris", {callback.redirect_uri()}},
                             {"grant_types", {"authorization_code", "refresh_token"}},
                             {"response_types", {"code"}},
                             {"token_endpoint_auth_method", "none"}});
    MATES_ASSIGN_OR_RETURN(Answer a, Exchange(std::move(req)));
    g.client_id = Str(a.json, "client_id");
    if ((a.status != 200 && a.status != 201) || g.client_id.empty()) {
      return Status::FailedPrecondition("registering mates with " + registration + " failed (HTTP " +
                                        std::to_string(a.status) + ")" +
                                        (Str(a.json, "error").empty() ? "" : ": " + Str(a.json, "error")));
    }
    g.client_secret = Str(a.json, "client_secret");
    g.auth_method = Str(a.json, "token_endpoint_auth_method");
    if (g.auth_method.empty()) g.auth_method = g.client_secret.empty() ? "none" : "client_secret_basic";
    if (g.auth_method != "none" && g.auth_method != "client_secret_basic" && g.auth_method != "client_secret_post") {
      return Status::FailedPrecondition("authorization server " + g.issuer + " registered mates for '" +
                                        g.auth_method.substr(0, 60) + "', which mates does not do");
    }
    Redacted(g.client_secret);
  } else {
    return Status::FailedPrecondition("authorization server " + g.issuer +
                                      " takes no registration: give a client registered there (--client-id, "
                                      "--client-secret)");
  }
  // 4. The scope.
  std::vector<std::string> scope = Words(!c.scope.empty() ? c.scope : Joined(resource_scopes));
  for (const auto& w : Words(o.scope)) {
    if (std::find(scope.begin(), scope.end(), w) == scope.end()) scope.push_back(w);
  }
  const auto as_scopes = Strings(as, "scopes_supported");
  if (!scope.empty() && std::find(as_scopes.begin(), as_scopes.end(), "offline_access") != as_scopes.end() &&
      std::find(scope.begin(), scope.end(), "offline_access") == scope.end()) {
    scope.push_back("offline_access");
  }
  // 5. The person, at the authorization endpoint.
  const std::string verifier = RandomToken(48);
  const std::string state = RandomToken(24);
  callback.Expect(state);
  const std::string url = authorize + (authorize.find('?') == std::string::npos ? "?" : "&") +
                          Form({{"response_type", "code"},
                                {"client_id", g.client_id},
                                {"redirect_uri", callback.redirect_uri()},
                                {"code_challenge", PkceChallenge(verifier)},
                                {"code_challenge_method", "S256"},
                                {"state", state},
                                {"scope", Joined(scope)},
                                {"resource", g.indicator}});
  if (o.open) o.open(url);
  MATES_ASSIGN_OR_RETURN(std::string code, callback.Wait(o.timeout_s));
  // 6. The code for tokens.
  MATES_ASSIGN_OR_RETURN(Answer a, TokenRequest(g, {{"grant_type", "authorization_code"},
                                                    {"code", code},
                                                    {"redirect_uri", callback.redirect_uri()},
                                                    {"code_verifier", verifier},
                                                    {"resource", g.indicator}}));
  g.scope = Joined(scope);
  return ReadTokens(a, std::move(g), "logging in to " + resource);
}

Result<std::string> ClientAssertion(const std::string& client_id, const std::string& audience,
                                    const std::string& key_file) {
  MATES_ASSIGN_OR_RETURN(std::string pem, ReadFilePrefix(key_file, 64 << 10));
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = bio != nullptr ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  if (key == nullptr) return Status::InvalidArgument(key_file + " holds no PEM private key mates can read");
  const int type = EVP_PKEY_base_id(key);
  const bool ec = type == EVP_PKEY_EC;
  if (!ec && type != EVP_PKEY_RSA) {
    EVP_PKEY_free(key);
    return Status::InvalidArgument(key_file + ": only EC (P-256, ES256) and RSA (RS256) keys sign client assertions");
  }
  const int64_t now = Now();
  const std::string header = Base64(DumpJson(Json{{"alg", ec ? "ES256" : "RS256"}, {"typ", "JWT"}}), true);
  const std::string claims = Base64(DumpJson(Json{{"iss", client_id},
                                                  {"sub", client_id},
                                                  {"aud", audience},
                                                  {"iat", now},
                                                  {"exp", now + 300},
                                                  {"jti", RandomToken(16)}}),
                                    true);
  const std::string input = header + "." + claims;
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  size_t len = 0;
  std::string sig;
  bool ok = md != nullptr && EVP_DigestSignInit(md, nullptr, EVP_sha256(), nullptr, key) == 1 &&
            EVP_DigestSign(md, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  if (ok) {
    sig.resize(len);
    ok = EVP_DigestSign(md, reinterpret_cast<unsigned char*>(sig.data()), &len,
                        reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
    sig.resize(len);
  }
  EVP_MD_CTX_free(md);
  EVP_PKEY_free(key);
  if (!ok) return Status::Internal("signing the client assertion failed");
  if (ec) {
    // JWS wants R || S, 32 bytes each, not OpenSSL's DER.
    const unsigned char* p = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    if (es == nullptr) return Status::Internal("reading the ECDSA signature failed");
    unsigned char raw[64];
    const bool sized = BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, 32) == 32 &&
                       BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + 32, 32) == 32;
    ECDSA_SIG_free(es);
    if (!sized) return Status::InvalidArgument(key_file + ": an EC key for ES256 must be on P-256");
    sig.assign(reinterpret_cast<const char*>(raw), 64);
  }
  return input + "." + Base64(sig, true);
}

Result<Grant> Refresh(const Grant& g) {
  if (g.refresh_token.empty()) return Status::FailedPrecondition("no refresh token for " + g.resource);
  MATES_ASSIGN_OR_RETURN(Answer a, TokenRequest(g, {{"grant_type", "refresh_token"},
                                                    {"refresh_token", g.refresh_token},
                                                    {"resource", g.indicator}}));
  return ReadTokens(a, g, "refreshing the token for " + g.resource);
}

Authorizer::Authorizer(std::string name, std::string resource, GrantStore store, std::optional<LoginOptions> login)
    : name_(std::move(name)), resource_(std::move(resource)), store_(std::move(store)), login_(std::move(login)) {}

std::string Authorizer::Header() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!loaded_) {
    loaded_ = true;
    auto g = store_.Load(resource_);
    if (!g.ok()) LogWarning("mcp: server " + name_ + ": " + g.status().message());
    if (g.ok()) grant_ = *g;
  }
  if (!grant_) return "";
  if (grant_->expires_at != 0 && Now() >= grant_->expires_at - 30 && !grant_->refresh_token.empty()) {
    auto fresh = Refresh(*grant_);
    if (fresh.ok()) {
      grant_ = *fresh;
      if (Status s = store_.Save(*grant_); !s.ok()) LogWarning("mcp: server " + name_ + ": " + s.message());
    } else {
      LogWarning("mcp: server " + name_ + ": " + fresh.status().message());
    }
  }
  return "Authorization: Bearer " + grant_->access_token;
}

bool Authorizer::Refused(int status, const std::string& www_authenticate, std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  Challenge c = ParseChallenge(www_authenticate);
  const bool more_scope = status == 403 && c.error == "insufficient_scope";
  if (status == 403 && !more_scope) {
    *why = "server " + name_ + " refused the token (HTTP 403" + (c.error.empty() ? "" : ", " + c.error) + ")";
    return false;
  }
  // A 401 with a token that may be refreshed: refreshed.
  if (status == 401 && grant_ && !grant_->refresh_token.empty()) {
    auto fresh = Refresh(*grant_);
    if (fresh.ok()) {
      const bool changed = fresh->access_token != grant_->access_token;
      grant_ = *fresh;
      if (Status s = store_.Save(*grant_); !s.ok()) LogWarning("mcp: server " + name_ + ": " + s.message());
      if (changed) return true;
    }
  }
  // A machine's grant is renewed as it was got: no person needed.
  if (status == 401 && grant_ && grant_->grant_type == "client_credentials" && logins_ < kMaxLogins) {
    ++logins_;
    LoginOptions machine;
    machine.client_credentials = true;
    machine.client_id = grant_->client_id;
    machine.client_secret = grant_->client_secret;
    machine.client_key_file = grant_->client_key_file;
    machine.scope = grant_->scope;
    auto g = Login(resource_, c, machine);
    if (g.ok()) {
      grant_ = *g;
      if (Status s = store_.Save(*grant_); !s.ok()) LogWarning("mcp: server " + name_ + ": " + s.message());
      return true;
    }
    *why = "renewing the machine login to server " + name_ + ": " + g.status().message();
    return false;
  }
  // Step-up asks for what it had and what the server names.
  if (more_scope && grant_) {
    std::vector<std::string> scope = Words(grant_->scope);
    for (const auto& w : Words(c.scope)) {
      if (std::find(scope.begin(), scope.end(), w) == scope.end()) scope.push_back(w);
    }
    c.scope = Joined(scope);
  }
  if (!login_) {
    *why = "server " + name_ + " wants a login" + (c.scope.empty() ? "" : " with scope '" + c.scope + "'") +
           " (HTTP " + std::to_string(status) + "): run `mates mcp login " + name_ + "`";
    return false;
  }
  if (logins_ >= kMaxLogins) {
    *why = "server " + name_ + " still refuses after " + std::to_string(kMaxLogins) + " logins (HTTP " +
           std::to_string(status) + (c.error.empty() ? "" : ", " + c.error) + "); mates stops asking";
    return false;
  }
  ++logins_;
  auto g = Login(resource_, c, *login_);
  if (!g.ok()) {
    *why = "logging in to server " + name_ + ": " + g.status().message();
    return false;
  }
  grant_ = *g;
  loaded_ = true;
  if (Status s = store_.Save(*grant_); !s.ok()) LogWarning("mcp: server " + name_ + ": " + s.message());
  return true;
}

}  // namespace mates::mcp::oauth
