// SHA-256, through OpenSSL's libcrypto (what trust records a file by, and
// what keeps a long name in a path one of its own).
#pragma once

#include <string>
#include <string_view>

namespace mates {

// The digest of `data` in lower-case hex (64 characters).
std::string Sha256Hex(std::string_view data);

}  // namespace mates
