// OAuth 2.1 for remote MCP servers (DESIGN §23; MCP 2025-11-25 "Authorization").
//
// A server that wants a token answers 401 with `WWW-Authenticate: Bearer
// resource_metadata="…", scope="…"`. Login then:
//  1. reads the server's protected-resource metadata (RFC 9728): the URL
//     the challenge names, else /.well-known/oauth-protected-resource with
//     the server's path, then at the root. Its `resource` must cover the
//     server's URL (same origin, a parent path): a server cannot have our
//     token sent on to another. None at
//     all: the 2025-03-26 way, the server's origin is its own
//     authorization server;
//  2. reads the authorization server's metadata (RFC 8414, OpenID
//     Connect discovery, path-aware in the order MCP gives); the 2025-03-26
//     way without any, /authorize, /token and /register at the origin;
//  3. has a client: pre-registered (client_id, client_secret), else the
//     URL of a client ID metadata document when the server takes those,
//     else dynamic registration (RFC 7591);
//  4. asks for the scope the challenge names, else the resource's
//     scopes_supported, else none (plus offline_access when the
//     authorization server lists it: a refresh token);
//  5. sends the person to the authorization endpoint with PKCE (S256), a
//     random state and the resource (RFC 8707), and takes the redirect on
//     127.0.0.1 (a listener of its own, for this login only);
//  6. trades the code for tokens at the token endpoint, the client
//     authenticated as registered (none, client_secret_basic or _post).
// Grants are kept per server URL in $XDG_CONFIG_HOME/mates/mcp-auth.json
// (0600, written under its lock); tokens are redacted from all output
// (core/secrets.h) once read. A session sends the access token; a 401
// refreshes it (once), a 403 insufficient_scope asks for the scope named
// (a new login when the person is there: `mates mcp login`, `mcp call
// --login`; otherwise an error that says to log in).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace mates::mcp::oauth {

namespace fs = std::filesystem;

// What a 401's or 403's WWW-Authenticate says (RFC 6750 §3, RFC 9728 §5.1).
struct Challenge {
  std::string resource_metadata;
  std::string scope;
  std::string error;  // e.g. insufficient_scope
};
// The Bearer challenge's parameters; anything else in the header is
// ignored (an empty Challenge when there is no Bearer one).
Challenge ParseChallenge(std::string_view header);

// PKCE (RFC 7636): the S256 challenge of `verifier`.
std::string PkceChallenge(std::string_view verifier);
// `bytes` random bytes, base64url without padding.
std::string RandomToken(size_t bytes);

// Where protected-resource metadata is looked for, in order, for the
// server at `resource` (the challenge's URL first when it names one).
std::vector<std::string> ResourceMetadataUrls(const std::string& resource, const Challenge& c);
// Where authorization-server metadata is looked for, in order, for `issuer`.
std::vector<std::string> AuthorizationServerMetadataUrls(const std::string& issuer);

// What a login got, and what refreshing it needs.
struct Grant {
  std::string resource;   // the server's URL (the key)
  std::string indicator;  // the resource named to the authorization server (RFC 8707)
  std::string issuer;
  std::string token_endpoint;
  std::string client_id;
  std::string client_secret;
  std::string auth_method = "none";  // none | client_secret_basic | client_secret_post | private_key_jwt
  std::string client_key_file;       // private_key_jwt's key (a path: the key stays in its file)
  std::string grant_type = "authorization_code";  // or client_credentials (no person needed to renew)
  std::string access_token;
  std::string refresh_token;
  std::string scope;
  int64_t expires_at = 0;  // unix seconds; 0 = not said
};

class GrantStore {
 public:
  explicit GrantStore(fs::path file = DefaultPath()) : file_(std::move(file)) {}
  // $XDG_CONFIG_HOME/mates/mcp-auth.json, else ~/.config/mates/mcp-auth.json.
  static fs::path DefaultPath();
  // The grant for the server at `resource` (none: nullopt). Its tokens
  // are redacted from everything mates writes from now on.
  Result<std::optional<Grant>> Load(const std::string& resource) const;
  Status Save(const Grant& g) const;
  // Whether there was one to forget.
  Result<bool> Forget(const std::string& resource) const;
  const fs::path& file() const { return file_; }

 private:
  fs::path file_;
};

struct LoginOptions {
  std::string client_id;      // pre-registered, with its secret if it has one
  std::string client_secret;
  std::string client_metadata_url;  // a client ID metadata document (https)
  std::string scope;          // asked for beyond what the server names
  // The client_credentials grant (a machine's login: no person, no
  // browser) with client_id and client_secret; also used unasked when the
  // server takes no other grant.
  bool client_credentials = false;
  // A PEM private key (EC P-256 or RSA) the client authenticates with
  // instead of a secret: private_key_jwt (RFC 7523), ES256 or RS256.
  std::string client_key_file;
  int callback_port = 0;      // the redirect's port on 127.0.0.1; 0: any free one
  double timeout_s = 300;     // for the person to come back
  // Told the URL the person must open (it returns at once).
  std::function<void(const std::string& url)> open;
};

// The authorization-code flow for the server at `resource`, from the
// challenge of its refusal (empty: a request finds it).
Result<Grant> Login(const std::string& resource, const Challenge& challenge, const LoginOptions& o);
// A new access token for `g` from its refresh token.
Result<Grant> Refresh(const Grant& g);
// A signed client assertion (RFC 7523 §2.2) for `client_id` to present at
// `audience`, with the PEM private key in `key_file`.
Result<std::string> ClientAssertion(const std::string& client_id, const std::string& audience,
                                    const std::string& key_file);

// A session's side: the token it sends, and what a refusal does.
class Authorizer {
 public:
  // `login`: how a person logs in when one is there; none: refusals that a
  // refresh does not cure are errors saying to run `mates mcp login NAME`.
  Authorizer(std::string name, std::string resource, GrantStore store, std::optional<LoginOptions> login);
  // "Authorization: Bearer …", or "" before any grant.
  std::string Header();
  // After a 401 or 403 with `www_authenticate`: true when a new token is
  // ready (send again); false with `why`.
  bool Refused(int status, const std::string& www_authenticate, std::string* why);

 private:
  const std::string name_;
  const std::string resource_;
  const GrantStore store_;
  const std::optional<LoginOptions> login_;
  std::mutex mu_;
  bool loaded_ = false;         // guarded by mu_
  std::optional<Grant> grant_;  // guarded by mu_
  int logins_ = 0;              // guarded by mu_: at most kMaxLogins
};

// Logins one session may make before it gives up (a server that asks for
// a scope it never grants would otherwise loop).
inline constexpr int kMaxLogins = 3;

}  // namespace mates::mcp::oauth
