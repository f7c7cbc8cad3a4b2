// What the parts of mates' Claude Code backend (claude_team.cc, which
// reads, and claude_steer.cc, which writes) share: the bounds on Claude
// Code's files and how one is read.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace mates::claude {

namespace fs = std::filesystem;

inline constexpr size_t kMaxInboxBytes = 16u << 20;
inline constexpr size_t kMaxTaskBytes = 1u << 20;
inline constexpr size_t kMaxMessageBytes = 256u << 10;  // what a person may send

// A JSON file Claude Code writes, read whole: one caught mid-write is read
// again; NotFound passes through; one that stays broken is Corrupt.
Result<Json> ReadJsonFile(const fs::path& path, size_t max_bytes);
// The names in `dir`, sorted ({} if it cannot be read).
std::vector<std::string> ListDir(const fs::path& dir);

}  // namespace mates::claude
