// Unique ids for messages ("m-…"), requests ("r-…") and log entries (UUID).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mates {

// `prefix` + "-" + 16 random hex digits, e.g. "m-8c1f0e2a93b4d7f1".
std::string NewId(std::string_view prefix);
// A random (version 4) UUID, e.g. "3b241101-e2bb-4255-8caf-4136c566a962".
std::string NewUuid();
// `digits` random lower-case hex digits, never all zero (W3C trace and span
// ids, DESIGN §29).
std::string RandomHex(size_t digits);

}  // namespace mates
