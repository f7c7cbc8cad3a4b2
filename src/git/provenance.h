// Provenance (DESIGN §30): every merge the queue lands carries a git note
// under refs/notes/mates, one JSON object — the task (id, subject), its
// agent, the models and the tokens and cost of its work, the base (the
// target it landed on) and head (the owner's commit), each check (command,
// exit code, duration, a digest of its output), the sandbox it ran in
// (mode and a digest of its policy), the hooks that ran, and who decided.
// Written before the target moves, so that no landed merge lacks one; a
// team with a remote pushes its notes beside its target, merged with the
// remote's first when another machine added some.
#pragma once

#include <string>
#include <string_view>

#include "core/json.h"
#include "git/git.h"
#include "store/roster.h"
#include "store/workspace.h"

namespace mates::git {

inline constexpr char kNotesRef[] = "refs/notes/mates";
// The largest note read back (a note is a few KiB).
inline constexpr size_t kMaxNoteBytes = size_t{1} << 20;

// `note` on `commit` (replacing one there), by `g`'s identity. Another
// queue of the workspace writing at the same moment is waited out.
Status WriteNote(const Git& g, const std::string& commit, const Json& note);
// The note on `commit` under `ref`: NotFound when it has none,
// FailedPrecondition when it is not one JSON object.
Result<Json> ReadNote(const Git& g, const std::string& commit, const std::string& ref = kNotesRef);

// With a remote: the remote's notes fetched and merged into ours (each
// merge has its own commit, so two machines' notes never collide). Nothing
// to do without one.
Status FetchNotes(const Workspace& ws, const TeamGit& g, const CancelToken* cancel = nullptr);
// With a remote: ours pushed there (after merging the remote's, when it
// moved meanwhile). Nothing to do without one.
Status PushNotes(const Workspace& ws, const TeamGit& g, const CancelToken* cancel = nullptr);

}  // namespace mates::git
