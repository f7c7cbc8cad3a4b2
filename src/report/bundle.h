// Bundles (DESIGN §31): a team's session as one file to look at elsewhere.
//
// A bundle is a gzipped tar (written and read with libarchive) of
//
//   bundle.json          the manifest, first: {format: "mates-bundle",
//                        version: 1, team, state, from, made, mates,
//                        git: {refs: [...], head} | null}
//   report.html          the session's report (report.h)
//   repo.bundle          a git bundle of the team's branches (its target,
//                        its teammates' mates/*@team, the provenance notes),
//                        or of HEAD for a team that shares one checkout
//   .teams/<team>/...    the team's files as the file store lays them out:
//   .tasks/<team>/...    roster, log, inboxes, requests, merges, journals,
//                        activity, board
//
// so that `mates import` makes it an archive of the importing workspace
// (store/archive.h): every `--archived` reader (report, log, usage, tasks,
// status, the dashboard) reads it unchanged. Reading one is reading
// anyone's file: only regular files (and folders) under those names, the
// manifest first, bounded in count and size, each written new (O_EXCL,
// O_NOFOLLOW) below a folder made for it, which becomes the archive at once
// (a rename) or is removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "store/archive.h"
#include "store/workspace.h"

namespace mates::report {

inline constexpr const char* kBundleFormat = "mates-bundle";
inline constexpr int kBundleVersion = 1;
// What a bundle may hold, read back.
inline constexpr size_t kMaxBundleEntries = 100000;
inline constexpr uint64_t kMaxBundleEntryBytes = uint64_t{4} << 30;
inline constexpr uint64_t kMaxBundleBytes = uint64_t{16} << 30;
inline constexpr size_t kMaxBundlePath = 512;

struct BundleManifest {
  std::string team;
  std::string state;  // the session's, as the report says it
  std::string from;   // the store it came from
  double made = 0;
  std::string mates;  // the version that wrote it
  std::vector<std::string> git_refs;  // in repo.bundle; empty: none
  std::string git_head;               // the exporting checkout's HEAD ("" none)
};
Json BundleManifestToJson(const BundleManifest& m);
Result<BundleManifest> BundleManifestFromJson(const Json& j);

// A file of the bundle: its name there, and where its bytes are.
struct BundleFile {
  std::string name;
  fs::path from;
};

// The team's files under the workspace `root` (a workspace or an archive):
// every regular file of `.teams/<team>` and `.tasks/<team>` but locks and
// spares, named as in a workspace.
Result<std::vector<BundleFile>> TeamFiles(const Workspace& root, const std::string& team);

// Writes the bundle to `out` (through a file beside it, renamed when
// whole): the manifest, `report_html`, the files (a file still being
// appended to is taken as far as it was when found).
Status WriteBundle(const fs::path& out, const BundleManifest& manifest, const std::string& report_html,
                   const std::vector<BundleFile>& files);

struct Imported {
  BundleManifest manifest;
  ArchivedTeam archive;  // where it is now
  size_t files = 0;
  uint64_t bytes = 0;
};
// Unpacks the bundle `file` into a new archive of `ws`. Nothing of a
// bundle that is refused (one clear error, naming the entry) is left.
Result<Imported> ImportBundle(const fs::path& file, const Workspace& ws);

}  // namespace mates::report
