// See http_guard.h.
#include "dashboard/http_guard.h"

#include <nlohmann/json.hpp>

namespace mates::dashboard {
namespace {

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kFailedPrecondition:
    case StatusCode::kConflict:
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

}  // namespace

void SendJson(httplib::Response& res, const Json& j, int status) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(DumpJson(j), "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, Json{{"error", message}}, status);
}

void SendStatus(httplib::Response& res, const Status& s) { SendError(res, HttpStatusOf(s), s.message()); }

void TooLarge(const httplib::Request&, httplib::Response& res) {
  SendError(res, 413, "the request body is over " + std::to_string(kMaxBodyBytes >> 10) + " KiB");
}

bool ReadJsonBody(const httplib::Request& req, httplib::Response& res, Json* out) {
  if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
    SendError(res, 415, "send JSON (Content-Type: application/json)");
    return false;
  }
  auto j = ParseJson(req.body);
  if (!j.ok() || !j->is_object()) {
    SendError(res, 400, j.ok() ? "the body must be a JSON object" : j.status().message());
    return false;
  }
  *out = std::move(*j);
  return true;
}

bool HttpGuard::Admit(const httplib::Request& req, httplib::Response& res) const {
  // A change asked from another page is refused; a page may be read from
  // anywhere that has the token (a link).
  auto refused = guard_.Check(req, /*check_origin=*/req.method == "POST");
  if (!refused) return true;
  if (refused->status == 401) {
    res.set_header("WWW-Authenticate", "Bearer");
    if (req.path == "/" || req.path.empty()) {
      res.status = 401;
      res.set_content(
          "mates dashboard: this URL needs its token. Open the URL that `mates up` or `mates dashboard` printed "
          "(`mates status` shows it too).\n",
          "text/plain; charset=utf-8");
      return false;
    }
  }
  SendError(res, refused->status, refused->message);
  return false;
}

}  // namespace mates::dashboard
