// Request bodies bounded whatever their framing (DESIGN §19), for the
// servers built on cpp-httplib (the dashboard, `mates mock-llm`).
//
// cpp-httplib 0.11 (Debian's) bounds a body only by its Content-Length: a
// chunked body, or one with no length at all, is read whole into memory
// before any handler runs (a gigabyte sent chunked took a host to ~1 GB).
// The library reads a body itself only for a route that does not read it;
// so every POST here is registered as one that reads its body a piece at a
// time and stops at the bound (PostBounded, 413), a POST to no route is
// drained the same way (404), and methods whose bodies nobody reads (all
// but GET, HEAD and POST) are refused before the library reads anything
// (RefusedMethod, 405). Header-only: it is included by the two servers
// that link cpp-httplib, and nothing else.
#pragma once

#include <httplib.h>

#include <functional>
#include <string>

namespace mates::llm {

using BodyHandler = std::function<void(const httplib::Request&, httplib::Response&)>;

// `handler` gets the request with its body, read up to `max_bytes`; a
// longer body (by its Content-Length, or as it comes) gets `too_large`
// (which fills in a 413) and the connection is closed.
inline void PostBounded(httplib::Server& server, const std::string& pattern, size_t max_bytes, BodyHandler handler,
                        BodyHandler too_large) {
  server.Post(pattern, [max_bytes, handler = std::move(handler), too_large = std::move(too_large)](
                           const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    httplib::Request whole = req;
    bool over = false;
    const bool read = reader([&](const char* data, size_t n) {
      if (whole.body.size() + n > max_bytes) {
        over = true;
        return false;
      }
      whole.body.append(data, n);
      return true;
    });
    if (over || res.status == 413) {
      res.status = 413;
      too_large(req, res);
      res.set_header("Connection", "close");
      return;
    }
    if (!read) {
      res.status = 400;
      res.set_header("Connection", "close");
      return;
    }
    handler(whole, res);
  });
}

// Whether `req`'s method is one whose body the server never reads bounded:
// answer it (405) before the library reads its body.
inline bool RefusedMethod(const httplib::Request& req) {
  return req.method != "GET" && req.method != "HEAD" && req.method != "POST";
}

}  // namespace mates::llm
