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
#include "mcp/oauth_wire.h"

namespace mates::mcp::oauth {

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

namespace {

// What a login learns before it asks anyone for anything: the resource's
// authorization server and its endpoints (DESIGN §18).
struct Discovered {
  Grant g;  // resource, indicator, issuer, token endpoint
  Challenge challenge;
  std::vector<std::string> resource_scopes;
  Json as;  // the authorization server's metadata ({} for a legacy server)
  std::string authorize, registration;
};

// 1. The resource's metadata, naming its authorization server; 2. that
// server's metadata, or the 2025-03-26 defaults for a legacy server.
Result<Discovered> Discover(const std::string& resource, const Challenge& challenge) {
  MATES_ASSIGN_OR_RETURN(UrlParts server, SplitUrl(resource));
  MATES_RETURN_IF_ERROR(Secure(resource, "server"));
  Discovered d;
  d.challenge = challenge;
  bool open = false;
  if (d.challenge.resource_metadata.empty() && d.challenge.scope.empty()) {
    MATES_ASSIGN_OR_RETURN(d.challenge, Probe(resource, &open));
  }
  MATES_ASSIGN_OR_RETURN(auto prm, FirstDocument(ResourceMetadataUrls(resource, d.challenge)));
  if (open && !prm) return Status::FailedPrecondition("server " + resource + " lets mates in without a login");
  Grant& g = d.g;
  g.resource = resource;
  g.indicator = resource;
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
    d.resource_scopes = Strings(doc, "scopes_supported");
  } else {
    g.issuer = server.origin;  // MCP 2025-03-26: the server's origin
  }
  MATES_ASSIGN_OR_RETURN(auto as_doc, FirstDocument(AuthorizationServerMetadataUrls(g.issuer)));
  d.as = as_doc ? as_doc->second : Json::object();
  d.authorize = Str(d.as, "authorization_endpoint");
  g.token_endpoint = Str(d.as, "token_endpoint");
  d.registration = Str(d.as, "registration_endpoint");
  if (!as_doc) {
    if (!legacy) {
      return Status::FailedPrecondition("authorization server " + g.issuer + " publishes no metadata (tried " +
                                        AuthorizationServerMetadataUrls(g.issuer).front() + " and the others)");
    }
    MATES_ASSIGN_OR_RETURN(UrlParts issuer, SplitUrl(g.issuer));
    d.authorize = issuer.origin + "/authorize";
    g.token_endpoint = issuer.origin + "/token";
    d.registration = issuer.origin + "/register";
  } else {
    auto methods = Strings(d.as, "code_challenge_methods_supported");
    if (std::find(methods.begin(), methods.end(), "S256") == methods.end()) {
      return Status::FailedPrecondition("authorization server " + g.issuer +
                                        " does not say it supports PKCE with S256; mates will not log in without it");
    }
  }
  if (d.authorize.empty() || g.token_endpoint.empty()) {
    return Status::FailedPrecondition("authorization server " + g.issuer + " names no authorization or token endpoint");
  }
  MATES_RETURN_IF_ERROR(Secure(d.authorize, "the authorization endpoint"));
  MATES_RETURN_IF_ERROR(Secure(g.token_endpoint, "the token endpoint"));
  if (!d.registration.empty()) MATES_RETURN_IF_ERROR(Secure(d.registration, "the registration endpoint"));
  return d;
}

bool Has(const std::vector<std::string>& list, const char* item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// The client the person registered there (--client-id, --client-secret),
// authenticating as the server prefers.
void Preregistered(Grant& g, const Json& as, const LoginOptions& o) {
  const auto methods = Strings(as, "token_endpoint_auth_methods_supported");
  g.client_id = o.client_id;
  g.client_secret = o.client_secret;
  Redacted(g.client_secret);
  g.auth_method = g.client_secret.empty()                                 ? "none"
                  : Has(methods, "client_secret_basic") || methods.empty() ? "client_secret_basic"
                  : Has(methods, "client_secret_post")                     ? "client_secret_post"
                                                                           : "client_secret_basic";
}

// 3. A client: the person's, a client metadata document's URL, or one
// registered now (RFC 7591) for `redirect_uri`.
Status ClientFor(Grant& g, const Discovered& d, const LoginOptions& o, const std::string& redirect_uri) {
  if (!o.client_id.empty()) {
    Preregistered(g, d.as, o);
    return Status::Ok();
  }
  if (!o.client_metadata_url.empty() && d.as.contains("client_id_metadata_document_supported") &&
      d.as["client_id_metadata_document_supported"] == true) {
    g.client_id = o.client_metadata_url;
    g.auth_method = "none";
    return Status::Ok();
  }
  if (d.registration.empty()) {
    return Status::FailedPrecondition("authorization server " + g.issuer +
                                      " takes no registration: give a client registered there (--client-id, "
                                      "--client-secret)");
  }
  llm::HttpRequest req;
  req.url = d.registration;
  req.headers = {"Content-Type: application/json", "Accept: application/json"};
  req.body = DumpJson(Json{{"client_name", "mates"},
                           {"redirect_uris", {redirect_uri}},
                           {"grant_types", {"authorization_code", "refresh_token"}},
                           {"response_types", {"code"}},
                           {"token_endpoint_auth_method", "none"}});
  MATES_ASSIGN_OR_RETURN(Answer a, Exchange(std::move(req)));
  g.client_id = Str(a.json, "client_id");
  if ((a.status != 200 && a.status != 201) || g.client_id.empty()) {
    return Status::FailedPrecondition("registering mates with " + d.registration + " failed (HTTP " +
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
  return Status::Ok();
}

// 4. The scope: the challenge's (else the resource's), the person's, and
// offline_access where the server offers it (for a refresh token).
std::vector<std::string> ScopeFor(const Discovered& d, const LoginOptions& o) {
  std::vector<std::string> scope =
      Words(!d.challenge.scope.empty() ? d.challenge.scope : Joined(d.resource_scopes));
  for (const auto& w : Words(o.scope)) {
    if (!Has(scope, w.c_str())) scope.push_back(w);
  }
  if (!scope.empty() && Has(Strings(d.as, "scopes_supported"), "offline_access") && !Has(scope, "offline_access")) {
    scope.push_back("offline_access");
  }
  return scope;
}

}  // namespace

Result<Grant> Login(const std::string& resource, const Challenge& challenge, const LoginOptions& o) {
  MATES_ASSIGN_OR_RETURN(Discovered d, Discover(resource, challenge));
  Grant g = d.g;
  // A machine's login (the client_credentials grant, SEP-1046): asked
  // for, or the only grant a server that takes our secret has.
  const auto grants = Strings(d.as, "grant_types_supported");
  const bool has_key = !o.client_secret.empty() || !o.client_key_file.empty();
  if (o.client_credentials ||
      (has_key && Has(grants, "client_credentials") && !Has(grants, "authorization_code"))) {
    if (o.client_id.empty() || !has_key) {
      return Status::InvalidArgument(
          "a machine's login (client_credentials) needs --client-id and --client-secret or --client-key");
    }
    Preregistered(g, d.as, o);
    if (!o.client_key_file.empty()) {
      g.auth_method = "private_key_jwt";
      g.client_key_file = fs::absolute(o.client_key_file).string();
    }
    g.grant_type = "client_credentials";
    g.scope = Joined(Words(!d.challenge.scope.empty() ? d.challenge.scope + " " + o.scope
                                                       : Joined(d.resource_scopes) + " " + o.scope));
    MATES_ASSIGN_OR_RETURN(Answer a, TokenRequest(g, {{"grant_type", "client_credentials"},
                                                      {"scope", g.scope},
                                                      {"resource", g.indicator}}));
    return ReadTokens(a, std::move(g), "logging in to " + resource);
  }
  // The redirect's listener first: its URL is part of the registration.
  Callback callback;
  MATES_RETURN_IF_ERROR(callback.Open(o.callback_port));
  MATES_RETURN_IF_ERROR(ClientFor(g, d, o, callback.redirect_uri()));
  const std::vector<std::string> scope = ScopeFor(d, o);
  // 5. The person, at the authorization endpoint.
  const std::string verifier = RandomToken(48);
  const std::string state = RandomToken(24);
  callback.Expect(state);
  const std::string url = d.authorize + (d.authorize.find('?') == std::string::npos ? "?" : "&") +
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
