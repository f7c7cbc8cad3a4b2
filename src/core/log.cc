#include "core/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string_view>

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

}  // namespace

void LogWarning(const std::string& message) { Logger().warn(message); }
void LogInfo(const std::string& message) { Logger().info(message); }
void LogDebug(const std::string& message) { Logger().debug(message); }

}  // namespace mates
