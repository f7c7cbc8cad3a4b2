// HttpTransport: how providers reach a server. CurlTransport is the real one
// (libcurl, kept out of headers); tests may substitute their own.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace mates::llm {

// How long a request that is not streamed may go without a byte: its
// reply comes whole, after the model has written all of it.
inline constexpr long kWholeReplyStallS = 600;

struct HttpRequest {
  // POST (with `body`), GET or DELETE (without).
  std::string method = "POST";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  double connect_timeout_s = 10;
  // A stream that delivers fewer than `low_speed_bytes` per second for
  // `low_speed_time_s` is abandoned. There is no total timeout: long
  // generations are fine as long as bytes (or pings) keep coming.
  long low_speed_bytes = 1;
  // (A request that is not streamed gets no byte until its reply is whole:
  // kWholeReplyStallS.)
  long low_speed_time_s = 120;
  // The whole exchange, reply included; 0 = none (a stream that sends only
  // pings would then go on for ever: --request-timeout bounds it).
  double total_timeout_s = 0;
  // Told the final status once the response's headers are in, before its
  // body (a stream that may stay quiet is open from then).
  std::function<void(int status)> on_headers;
  // Asked about once a second while the exchange runs: true ends it as
  // Timeout (a deadline that may move, unlike total_timeout_s).
  std::function<bool()> give_up;
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;  // the error body (non-2xx); for 2xx, what on_data did not take
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // Sends `request`. The body of a 2xx response goes to `on_data` as it
  // arrives (return false to stop); any other body is collected. Failures to
  // connect or a connection lost mid-response are Unavailable; a set
  // `cancel` flag ends the call as Cancelled within a second.
  virtual Result<HttpResponse> Send(const HttpRequest& request,
                                    const std::function<bool(std::string_view)>& on_data,
                                    const std::atomic<bool>* cancel) = 0;
};

// Thread-safe: concurrent Sends use separate curl handles from a pool, so
// connections are reused between calls.
std::unique_ptr<HttpTransport> NewCurlTransport();

}  // namespace mates::llm
