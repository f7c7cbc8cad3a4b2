// Team and member names: ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ (DESIGN §2).
// They become file names, so anything else (slashes, "..", empty, too long)
// is refused before any path is built.
#pragma once

#include <string_view>

#include "core/status.h"

namespace mates {

// InvalidArgument naming `kind` ("team name", "member name") and the rule.
Status ValidateName(std::string_view kind, std::string_view name);

}  // namespace mates
