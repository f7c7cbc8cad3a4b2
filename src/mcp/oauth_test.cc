// OAuth's parts that need no server (mcp/oauth.h): challenges read
// strictly, PKCE's S256 on a known SHA-256 vector, where metadata is looked for,
// the grants file (0600, tokens redacted once read), and client
// assertions verified with the public key. The flows themselves run
// against the official conformance suite's servers (tests/CMakeLists.txt,
// McpConformance.client.auth/*).
#include "mcp/oauth.h"

#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "core/files.h"
#include "core/json.h"
#include "core/secrets.h"
#include "support/test_util.h"

namespace mates::mcp::oauth {
namespace {

TEST(OAuthTest, ChallengesAreReadAsRfc6750WritesThem) {
  Challenge c = ParseChallenge(
      R"(Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write")");
  EXPECT_EQ(c.resource_metadata, "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
  EXPECT_EQ(c.scope, "files:read files:write");
  EXPECT_EQ(c.error, "");
  // Any case, unquoted values, escapes, and another scheme before it.
  c = ParseChallenge(R"(Basic realm="x", bearer error=insufficient_scope, SCOPE="a \"b\"", Resource_Metadata=https://h/m)");
  EXPECT_EQ(c.error, "insufficient_scope");
  EXPECT_EQ(c.scope, "a \"b\"");
  EXPECT_EQ(c.resource_metadata, "https://h/m");
  // Parameters of another scheme are not the Bearer's.
  c = ParseChallenge(R"(Bearer scope="mine", Basic realm="theirs", scope="not mine")");
  EXPECT_EQ(c.scope, "mine");
  for (const char* bad : {"", "Basic realm=\"x\"", "Bearer", "Bearer ,,,", "Bearer scope=\"unterminated", "=\"\"",
                          "Bearer =x", "\"Bearer\" scope=x"}) {
    Challenge none = ParseChallenge(bad);
    EXPECT_TRUE(none.resource_metadata.empty()) << bad;
    EXPECT_TRUE(none.error.empty()) << bad;
  }
  EXPECT_EQ(ParseChallenge("Bearer scope=\"unterminated").scope, "unterminated");
}

TEST(OAuthTest, PkceIsSha256InBase64UrlAndRandomTokensDiffer) {
  // FIPS 180-2's SHA-256("abc") = ba7816bf…f20015ad, in base64url without
  // padding.
  EXPECT_EQ(PkceChallenge("abc"), "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
  const std::string a = RandomToken(48), b = RandomToken(48);
  EXPECT_EQ(a.size(), 64u);  // 48 bytes, base64url without padding
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), std::string::npos);
}

TEST(OAuthTest, MetadataIsLookedForWhereMcpSays) {
  EXPECT_EQ(ResourceMetadataUrls("https://h:8443/public/mcp/", {}),
            (std::vector<std::string>{"https://h:8443/.well-known/oauth-protected-resource/public/mcp",
                                      "https://h:8443/.well-known/oauth-protected-resource"}));
  Challenge named;
  named.resource_metadata = "https://h/custom.json";
  EXPECT_EQ(ResourceMetadataUrls("https://h", named),
            (std::vector<std::string>{"https://h/custom.json", "https://h/.well-known/oauth-protected-resource"}));
  EXPECT_EQ(AuthorizationServerMetadataUrls("https://auth.example.com/tenant1"),
            (std::vector<std::string>{"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                                      "https://auth.example.com/.well-known/openid-configuration/tenant1",
                                      "https://auth.example.com/tenant1/.well-known/openid-configuration"}));
  EXPECT_EQ(AuthorizationServerMetadataUrls("http://127.0.0.1:9/"),
            (std::vector<std::string>{"http://127.0.0.1:9/.well-known/oauth-authorization-server",
                                      "http://127.0.0.1:9/.well-known/openid-configuration"}));
  // Not http(s): nowhere (a login refuses it).
  EXPECT_TRUE(AuthorizationServerMetadataUrls("file:///etc/passwd").empty());
  EXPECT_TRUE(ResourceMetadataUrls("ftp://h/x", {}).empty());
  auto login = Login("file:///etc/passwd", {}, {});
  ASSERT_FALSE(login.ok());
  EXPECT_EQ(login.status().code(), StatusCode::kInvalidArgument);
  // Tokens over TLS only, but for this machine's own servers.
  for (const char* clear : {"http://mcp.example.com/mcp", "http://10.0.0.1:8080/mcp", "http://127.0.0.1.evil.com/mcp"}) {
    auto refused = Login(clear, {}, {});
    ASSERT_FALSE(refused.ok()) << clear;
    EXPECT_NE(refused.status().message().find("over https only"), std::string::npos) << refused.status().message();
  }
}

TEST(OAuthTest, GrantsAreKeptPrivateAndTheirTokensNeverShown) {
  testing::TempDir dir;
  GrantStore store(dir.path() / "mates" / "mcp-auth.json");
  EXPECT_FALSE(store.Load("https://a/mcp")->has_value());
  Grant g;
  g.resource = "https://a/mcp";
  g.indicator = "https://a";
  g.token_endpoint = "https://auth/token";
  g.client_id = "c1";
  g.client_secret = "secret-of-the-client-123";
  g.auth_method = "client_secret_post";
  g.access_token = "access-token-abcdef-123456";
  g.refresh_token = "refresh-token-abcdef-123456";
  g.scope = "a b";
  g.expires_at = 1234567890;
  ASSERT_TRUE(store.Save(g).ok());
  Grant other = g;
  other.resource = "https://b/mcp";
  ASSERT_TRUE(store.Save(other).ok());
  struct stat st {};
  ASSERT_EQ(::stat(store.file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto back = store.Load("https://a/mcp");
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->indicator, "https://a");
  EXPECT_EQ((*back)->client_secret, g.client_secret);
  EXPECT_EQ((*back)->auth_method, "client_secret_post");
  EXPECT_EQ((*back)->expires_at, 1234567890);
  EXPECT_EQ((*back)->grant_type, "authorization_code");
  // Read once, never shown.
  EXPECT_EQ(Secrets::Redact("got access-token-abcdef-123456 and refresh-token-abcdef-123456, secret-of-the-client-123"),
            "got [redacted] and [redacted], [redacted]");
  EXPECT_TRUE(*store.Forget("https://a/mcp"));
  EXPECT_FALSE(*store.Forget("https://a/mcp"));
  EXPECT_FALSE(store.Load("https://a/mcp")->has_value());
  EXPECT_TRUE(store.Load("https://b/mcp")->has_value());
  // A file that is not ours: one clear error.
  ASSERT_TRUE(WriteFileAtomic(store.file(), "[1, 2]", 0600).ok());
  auto corrupt = store.Load("https://b/mcp");
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.status().message().find("is not mates' MCP grants file"), std::string::npos);
  EXPECT_FALSE(store.Save(g).ok());
}

// The JWS's R || S back into the DER that EVP verifies.
std::string DerOf(const std::string& raw) {
  ECDSA_SIG* sig = ECDSA_SIG_new();
  ECDSA_SIG_set0(sig, BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), 32, nullptr),
                 BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()) + 32, 32, nullptr));
  unsigned char* der = nullptr;
  int n = i2d_ECDSA_SIG(sig, &der);
  std::string out(reinterpret_cast<char*>(der), static_cast<size_t>(n));
  OPENSSL_free(der);
  ECDSA_SIG_free(sig);
  return out;
}

std::string Unbase64Url(std::string s) {
  for (char& c : s) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (s.size() % 4 != 0) s += '=';
  std::string out(s.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(s.data()),
                          static_cast<int>(s.size()));
  out.resize(static_cast<size_t>(n) - (s.size() - s.find_last_not_of('=') - 1));
  return out;
}

TEST(OAuthTest, ClientAssertionsAreSignedWithTheKeyAndSayWhoAndForWhom) {
  testing::TempDir dir;
  EVP_PKEY* key = EVP_EC_gen("P-256");
  ASSERT_NE(key, nullptr);
  BIO* bio = BIO_new(BIO_s_mem());
  ASSERT_EQ(PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  char* pem = nullptr;
  long len = BIO_get_mem_data(bio, &pem);
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "key.pem", std::string(pem, static_cast<size_t>(len)), 0600).ok());
  BIO_free(bio);

  auto jwt = ClientAssertion("client-7", "https://auth.example.com", (dir.path() / "key.pem").string());
  ASSERT_TRUE(jwt.ok()) << jwt.status().message();
  const size_t dot1 = jwt->find('.'), dot2 = jwt->rfind('.');
  ASSERT_NE(dot1, dot2);
  auto header = ParseJson(Unbase64Url(jwt->substr(0, dot1)));
  auto claims = ParseJson(Unbase64Url(jwt->substr(dot1 + 1, dot2 - dot1 - 1)));
  ASSERT_TRUE(header.ok() && claims.ok());
  EXPECT_EQ((*header)["alg"], "ES256");
  EXPECT_EQ((*claims)["iss"], "client-7");
  EXPECT_EQ((*claims)["sub"], "client-7");
  EXPECT_EQ((*claims)["aud"], "https://auth.example.com");
  EXPECT_GT((*claims)["exp"].get<int64_t>(), (*claims)["iat"].get<int64_t>());
  const std::string raw = Unbase64Url(jwt->substr(dot2 + 1));
  ASSERT_EQ(raw.size(), 64u);
  const std::string der = DerOf(raw);
  const std::string input = jwt->substr(0, dot2);
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ASSERT_EQ(EVP_DigestVerifyInit(md, nullptr, EVP_sha256(), nullptr, key), 1);
  EXPECT_EQ(EVP_DigestVerify(md, reinterpret_cast<const unsigned char*>(der.data()), der.size(),
                             reinterpret_cast<const unsigned char*>(input.data()), input.size()),
            1)
      << "the assertion's signature does not verify with the public key";
  EVP_MD_CTX_free(md);
  EVP_PKEY_free(key);

  // Bad keys: one clear error each.
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "junk.pem", "not a key", 0600).ok());
  auto junk = ClientAssertion("c", "a", (dir.path() / "junk.pem").string());
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("holds no PEM private key"), std::string::npos);
  EXPECT_FALSE(ClientAssertion("c", "a", (dir.path() / "missing.pem").string()).ok());
}

}  // namespace
}  // namespace mates::mcp::oauth
