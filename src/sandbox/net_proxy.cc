#include "sandbox/net_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/log.h"
#include "core/sha256.h"
#include "core/unix_socket.h"
#include "sandbox/agent_sockets.h"
#include "sandbox/pump.h"

namespace mates::sandbox {
namespace {

constexpr int kConnectTimeoutMs = 10000;
constexpr size_t kMaxConnections = 64;
constexpr size_t kMaxDenials = 64;

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsLoopbackName(const std::string& h) { return h == "127.0.0.1" || h == "localhost" || h == "::1"; }

// Whether `host` is an address written out (what inet_pton reads; "127.1"
// or "2130706433", which getaddrinfo also takes, are names here).
bool IsAddressLiteral(const std::string& host) {
  unsigned char buf[sizeof(struct in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// A TCP connection to host:port within the timeout; -1 and `*why` if not.
// Every address the name resolves to is classed before it is used, and
// the connection goes to that address: a rule for a name never opens this
// machine, its network or a multicast group (a name can resolve to
// 0.0.0.0, ::ffff:127.0.0.1 or 10.0.0.1 as easily as to 127.0.0.1).
// `literal_ok`: the person's rule names this very address.
int ConnectTo(const std::string& host, int port, bool literal_ok, std::string* why) {
  struct addrinfo hints {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    *why = std::string("cannot resolve: ") + ::gai_strerror(rc);
    return -1;
  }
  int out = -1;
  *why = "no address";
  for (struct addrinfo* ai = res; ai != nullptr && out < 0; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    if (std::string cls = NonPublicClass(ai->ai_addr); !cls.empty() && !literal_ok) {
      *why = "it resolves to " + AddressText(ai->ai_addr) + ", " + cls +
             ", which a rule for a name does not open (a person can allow that address itself)";
      continue;
    }
    int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      struct pollfd p = {fd, POLLOUT, 0};
      rc = ::poll(&p, 1, kConnectTimeoutMs) == 1 ? 0 : -1;
      int err = 0;
      socklen_t len = sizeof err;
      if (rc == 0 && (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)) {
        errno = err;
        rc = -1;
      }
    }
    if (rc != 0) {
      *why = std::strerror(errno);
      ::close(fd);
      continue;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    out = fd;
  }
  ::freeaddrinfo(res);
  return out;
}

// "host:port" (or "[v6]:port") into its parts; port 0 if absent.
bool SplitHostPort(const std::string& s, std::string* host, int* port) {
  std::string h = s;
  std::string p;
  if (!h.empty() && h[0] == '[') {
    size_t close = h.find(']');
    if (close == std::string::npos) return false;
    p = close + 1 < h.size() && h[close + 1] == ':' ? h.substr(close + 2) : "";
    h = h.substr(1, close - 1);
  } else if (size_t colon = h.rfind(':'); colon != std::string::npos) {
    p = h.substr(colon + 1);
    h = h.substr(0, colon);
  }
  *port = 0;
  if (!p.empty()) {
    if (p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
    *port = std::stoi(p);
    if (*port < 1 || *port > 65535) return false;
  }
  *host = Lower(h);
  return !host->empty() && host->find_first_of(" \t\r\n/@") == std::string::npos;
}

std::string Forbidden(const std::string& host, int port) {
  std::string body = "mates sandbox: " + host + (port > 0 ? ":" + std::to_string(port) : "") +
                     " is not in sandbox.network.allow. A person can allow it in ~/.config/mates/config.yaml "
                     "(sandbox: {network: {allow: [" + host + "]}}).\n";
  return "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string BadGateway(const std::string& what) {
  std::string body = "mates sandbox proxy: " + what + "\n";
  return "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

Result<NetRule> ParseNetRule(const std::string& entry) {
  NetRule r;
  std::string host;
  if (!SplitHostPort(entry, &host, &r.port)) {
    return Status::InvalidArgument("'" + entry + "' is not a host name or host:port");
  }
  r.host = host;
  return r;
}

std::string SocketDirName(const std::string& team, const std::string& agent) {
  // Injective: each part percent-encodes all but letters, digits, '.',
  // '_' and '-', an absent part is "-" (no name starts so), and '+' (never
  // in an encoded part) joins them — team "a" member "b.c" and team "a.b"
  // member "c" get folders of their own.
  auto part = [](const std::string& s) {
    if (s.empty()) return std::string("-");
    std::string out;
    for (unsigned char c : s) {
      if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
        out += static_cast<char>(c);
      } else {
        static const char kHex[] = "0123456789ABCDEF";
        out += {'%', kHex[c >> 4], kHex[c & 15]};
      }
    }
    return out;
  };
  std::string name = part(team) + "+" + part(agent);
  // A socket's path is at most 107 bytes: a long name keeps a readable
  // head and a digest of the whole (SHA-256, so still one folder a pair).
  if (name.size() > 64) name = name.substr(0, 40) + "~" + Sha256Hex(name).substr(0, 20);
  return name;
}

std::string NonPublicClass(const struct sockaddr* a) {
  auto v4 = [](uint32_t ip) -> std::string {  // host byte order
    const uint32_t top = ip >> 24;
    if (top == 127) return "a loopback address";
    if (top == 0) return "an unspecified address (this machine)";
    if (top == 10 || (ip >> 20) == 0xAC1 || (ip >> 16) == 0xC0A8) return "a private address";
    if ((ip >> 22) == (100u << 2 | 1)) return "a shared (carrier-grade NAT) address";
    if ((ip >> 16) == 0xA9FE) return "a link-local address";
    if ((ip >> 28) == 0xE) return "a multicast address";
    if ((ip >> 28) == 0xF) return "a reserved or broadcast address";
    return "";
  };
  if (a->sa_family == AF_INET) return v4(ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr));
  if (a->sa_family != AF_INET6) return "not an internet address";
  const struct in6_addr& x = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
  const uint8_t* b = x.s6_addr;
  auto embedded = [&](size_t at) {
    return static_cast<uint32_t>(b[at]) << 24 | static_cast<uint32_t>(b[at + 1]) << 16 |
           static_cast<uint32_t>(b[at + 2]) << 8 | b[at + 3];
  };
  if (IN6_IS_ADDR_LOOPBACK(&x)) return "a loopback address";
  if (IN6_IS_ADDR_UNSPECIFIED(&x)) return "an unspecified address (this machine)";
  // ::ffff:a.b.c.d and ::a.b.c.d reach a.b.c.d; 64:ff9b::a.b.c.d through NAT64.
  if (IN6_IS_ADDR_V4MAPPED(&x) || IN6_IS_ADDR_V4COMPAT(&x)) {
    std::string c = v4(embedded(12));
    return c.empty() ? "" : c + " (written as IPv6)";
  }
  static const uint8_t kNat64[12] = {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(b, kNat64, sizeof kNat64) == 0) {
    std::string c = v4(embedded(12));
    if (!c.empty()) return c + " (through NAT64)";
  }
  if (IN6_IS_ADDR_LINKLOCAL(&x) || IN6_IS_ADDR_SITELOCAL(&x)) return "a link-local address";
  if ((b[0] & 0xfe) == 0xfc) return "a private address";  // fc00::/7
  if (IN6_IS_ADDR_MULTICAST(&x)) return "a multicast address";
  return "";
}

std::string AddressText(const struct sockaddr* a) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (a->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, buf, sizeof buf);
  } else if (a->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

bool Allows(const std::vector<NetRule>& rules, const std::string& host, int port) {
  const std::string h = Lower(host);
  for (const auto& r : rules) {
    if (r.port != 0 && r.port != port) continue;
    if (r.host == h) return true;
    if (r.host.rfind("*.", 0) == 0) {
      const std::string base = r.host.substr(2);
      if (h.size() > base.size() && h.compare(h.size() - base.size(), base.size(), base) == 0 &&
          h[h.size() - base.size() - 1] == '.') {
        return true;
      }
    }
  }
  return false;
}

std::vector<int> LoopbackPorts(const std::vector<NetRule>& rules) {
  std::vector<int> out;
  for (const auto& r : rules) {
    // Below 1024 a port needs a capability the sandbox has not: those are
    // reached through the proxy (CONNECT) only.
    if (r.port >= 1024 && r.port != kRelayPort && IsLoopbackName(r.host) &&
        std::find(out.begin(), out.end(), r.port) == out.end()) {
      out.push_back(r.port);
    }
  }
  return out;
}

NetProxy::NetProxy(std::vector<NetRule> rules, fs::path dir, std::function<void(const NetDenial&)> on_denied)
    : rules_(std::move(rules)), on_denied_(std::move(on_denied)) {
  sockets_ = std::make_unique<AgentSockets>(
      std::move(dir), 64,
      [](const AgentSockets::Caller&, size_t running) {
        return running >= kMaxConnections ? BadGateway("more than 64 connections at once") : std::string();
      },
      [this](ScopedFd conn, const AgentSockets::Caller& who) { Handle(conn.get(), who.team, who.agent); });
}

NetProxy::~NetProxy() {
  stop_ = true;  // every connection's pump ends
  sockets_.reset();
}

std::vector<NetDenial> NetProxy::Denials() const {
  std::lock_guard<std::mutex> l(mu_);
  return denials_;
}

Result<fs::path> NetProxy::SocketFor(const std::string& team, const std::string& agent) {
  return sockets_->SocketFor(team, agent);
}

void NetProxy::Deny(const std::string& team, const std::string& agent, const std::string& host, int port) {
  NetDenial d{team, agent, host, port, static_cast<double>(std::time(nullptr))};
  {
    std::lock_guard<std::mutex> l(mu_);
    denials_.push_back(d);
    if (denials_.size() > kMaxDenials) denials_.erase(denials_.begin());
  }
  LogWarning("sandbox: " + (agent.empty() ? std::string("a tool") : agent) + " was refused " + host +
             (port > 0 ? ":" + std::to_string(port) : "") + " (not in sandbox.network.allow)");
  if (on_denied_) on_denied_(d);
}

void NetProxy::Handle(int conn, const std::string& team, const std::string& agent) {
  std::string head, rest;
  if (!ReadHead(conn, &head, &rest)) {
    SendAll(conn, BadGateway("the request's head did not come whole within 10 s and 16 KiB"));
    return;
  }
  const size_t line_end = head.find("\r\n");
  const std::string line = head.substr(0, line_end);
  const size_t s1 = line.find(' '), s2 = line.rfind(' ');
  if (s1 == std::string::npos || s2 == s1) {
    SendAll(conn, BadGateway("not an HTTP request"));
    return;
  }
  const std::string method = line.substr(0, s1), target = line.substr(s1 + 1, s2 - s1 - 1),
                    version = line.substr(s2 + 1);
  std::string host;
  int port = 0;
  std::string forward;  // what goes to the server first (none for CONNECT)
  if (method == "CONNECT") {
    if (!SplitHostPort(target, &host, &port) || port == 0) {
      SendAll(conn, BadGateway("CONNECT needs host:port"));
      return;
    }
  } else {
    if (Lower(target.substr(0, 7)) != "http://") {
      SendAll(conn, BadGateway("a proxy request needs an absolute http:// URL (https goes through CONNECT)"));
      return;
    }
    const size_t path_at = target.find('/', 7);
    const std::string authority = target.substr(7, path_at == std::string::npos ? std::string::npos : path_at - 7);
    if (!SplitHostPort(authority, &host, &port)) {
      SendAll(conn, BadGateway("a URL without a host"));
      return;
    }
    if (port == 0) port = 80;
    // The origin form, and no header meant for the proxy.
    forward = method + " " + (path_at == std::string::npos ? "/" : target.substr(path_at)) + " " + version + "\r\n";
    size_t at = line_end + 2;
    while (at < head.size()) {
      size_t e = head.find("\r\n", at);
      std::string h = head.substr(at, e - at);
      at = e + 2;
      if (h.empty()) break;
      std::string name = Lower(h.substr(0, h.find(':')));
      if (name == "proxy-connection" || name == "proxy-authorization") continue;
      forward += h + "\r\n";
    }
    forward += "\r\n" + rest;
  }
  if (!Allows(rules_, host, port)) {
    Deny(team, agent, host, port);
    SendAll(conn, Forbidden(host, port));
    return;
  }
  std::string why;
  // Only an address the person wrote down as such (or "localhost") may be
  // a non-public one.
  bool literal = false;
  for (const auto& r : rules_) {
    literal = literal || (r.host == host && (r.port == 0 || r.port == port) &&
                          (IsAddressLiteral(host) || host == "localhost"));
  }
  int up = ConnectTo(host, port, literal, &why);
  if (up < 0) {
    SendAll(conn, BadGateway("cannot reach " + host + ":" + std::to_string(port) + ": " + why));
    return;
  }
  ScopedFd upstream(up);
  if (method == "CONNECT") {
    if (!SendAll(conn, "HTTP/1.1 200 Connection Established\r\n\r\n")) return;
    if (!rest.empty() && !SendAll(up, rest)) return;
  } else if (!SendAll(up, forward)) {
    return;
  }
  Pump(conn, up, &stop_);
}

}  // namespace mates::sandbox
