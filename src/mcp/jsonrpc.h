// JSON-RPC 2.0 as MCP frames it (DESIGN §14): one message per line. What
// arrived is classified once, here, with the error a bad frame earns; the
// server then deals only with well-formed requests and notifications.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/json.h"

namespace mates::mcp {

// The error codes of JSON-RPC 2.0 that MCP uses.
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

// One frame is at most this long (a 1 MiB message escaped, with room).
inline constexpr size_t kMaxFrameBytes = 4 << 20;

struct Incoming {
  enum class Kind {
    kRequest,       // method + id: answer it
    kNotification,  // method, no id: never answered
    kResponse,      // result or error with an id: an answer to us (we ask nothing; ignored)
    kInvalid,       // answer with `error_code` / `error` (to `id`, null when unknown)
  };
  Kind kind = Kind::kInvalid;
  Json id;  // string or integer; null when absent or unusable
  std::string method;
  Json params = Json::object();  // always an object (absent params are {})
  int error_code = 0;
  std::string error;
};

// Classifies one frame (a line without its newline), at most
// kMaxFrameBytes long.
Incoming ParseFrame(std::string_view frame);
// Classifies a message already parsed (a client reads larger answers).
Incoming Classify(const Json& msg);

// The lines sent back: a result, or an error (id null when the request's id
// could not be read).
std::string ResultFrame(const Json& id, Json result);
std::string ErrorFrame(const Json& id, int code, const std::string& message);

}  // namespace mates::mcp
