// libFuzzer target: what an MCP server says to a client that wants a token
// (mcp/oauth.h) — a WWW-Authenticate header, and the URLs the metadata is
// then looked for at. The input's first line is the header, the second a
// URL. Nothing may throw or crash, and every URL looked at (but the one the
// challenge names) is an http(s) URL built from the parsed one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "mcp/oauth.h"

using namespace mates::mcp::oauth;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string header(input.substr(0, nl));
  const std::string url(nl == std::string_view::npos ? "" : input.substr(nl + 1));
  Challenge c = ParseChallenge(header);
  // What is read is from the header, never more than it.
  if (c.scope.size() > header.size() || c.resource_metadata.size() > header.size() || c.error.size() > header.size()) {
    std::abort();
  }
  auto web = [](const std::string& u) { return u.rfind("http://", 0) == 0 || u.rfind("https://", 0) == 0; };
  for (const auto& u : ResourceMetadataUrls(url, c)) {
    if (u != c.resource_metadata && !web(u)) std::abort();
  }
  for (const auto& u : AuthorizationServerMetadataUrls(url)) {
    if (!web(u)) std::abort();
  }
  (void)PkceChallenge(header);
  return 0;
}
