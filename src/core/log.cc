#include "core/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string_view>

#include "core/secrets.h"
#include "core/text.h"

namespace mates {
namespace {

spdlog::logger& Logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_logger_mt("mates");
    l->set_pattern("mates: %l: %v");
    const char* debug = std::getenv("MATES_DEBUG");
    l->set_level(debug != nullptr && std::string_view(debug) == "1" ? spdlog::level::debug
                                                                     : spdlog::level::info);
    return l;
  }();
  return *logger;
}

std::mutex tap_mu;
std::shared_ptr<const LogTap> tap;  // guarded by tap_mu
thread_local bool in_tap = false;

void Tap(bool warning, const std::string& line) {
  if (in_tap) return;
  std::shared_ptr<const LogTap> t;
  {
    std::lock_guard<std::mutex> lock(tap_mu);
    t = tap;
  }
  if (!t) return;
  in_tap = true;
  (*t)(warning, line);
  in_tap = false;
}

}  // namespace

void SetLogTap(LogTap t) {
  std::lock_guard<std::mutex> lock(tap_mu);
  tap = t ? std::make_shared<const LogTap>(std::move(t)) : nullptr;
}

// Every line goes through Secrets::Redact (a server's error text or a
// file's content may carry a key) and ForTerminal (it may carry control
// sequences: DESIGN §26).
void LogWarning(const std::string& message) {
  const std::string line = ForTerminal(Secrets::Redact(message));
  Logger().warn(line);
  Tap(true, line);
}
void LogInfo(const std::string& message) {
  const std::string line = ForTerminal(Secrets::Redact(message));
  Logger().info(line);
  Tap(false, line);
}
void WarnIfFailed(const Status& s, const std::string& what) {
  if (!s.ok()) LogWarning(what + ": " + s.message());
}

void LogDebug(const std::string& message) {
  if (Logger().should_log(spdlog::level::debug)) Logger().debug(ForTerminal(Secrets::Redact(message)));
}

}  // namespace mates
