#include "git/in_process.h"

#include <git2.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <set>

namespace mates::git {

namespace {

// libgit2 set up once: the repository's own config only (as git.h's `git`
// reads it), never the system's, the person's or XDG's.
void Init() {
  static std::once_flag once;
  std::call_once(once, [] {
    git_libgit2_init();
    for (int level : {GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_XDG, GIT_CONFIG_LEVEL_GLOBAL,
                      GIT_CONFIG_LEVEL_PROGRAMDATA}) {
      git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, "");
    }
  });
}

std::string LastError(const std::string& what) {
  const git_error* e = git_error_last();
  return "libgit2: " + what + (e != nullptr && e->message != nullptr ? ": " + std::string(e->message) : "");
}

// A failure libgit2 has where git may not: the caller runs git.
Status Fallback(const std::string& what) { return Status::FailedPrecondition(LastError(what)); }

template <typename T, void (*Free)(T*)>
struct Owned {
  T* p = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (p != nullptr) Free(p);
  }
};
using Commit = Owned<git_commit, git_commit_free>;
using Tree = Owned<git_tree, git_tree_free>;
using Diff = Owned<git_diff, git_diff_free>;
using Object = Owned<git_object, git_object_free>;
using Reference = Owned<git_reference, git_reference_free>;
using Signature = Owned<git_signature, git_signature_free>;
using Index = Owned<git_index, git_index_free>;

Result<git_oid> ParseId(const std::string& id) {
  if (!IsCommitId(id) || id.size() != GIT_OID_HEXSZ) return Status::FailedPrecondition("libgit2 takes SHA-1 ids only");
  git_oid oid;
  if (git_oid_fromstr(&oid, id.c_str()) != 0) return Fallback("an id");
  return oid;
}

std::string IdText(const git_oid& oid) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  return hex;
}

// The local zone is read one thread at a time: by Sign, and by libgit2
// itself when it dates a reflog entry (a ref moved, a commit or a note
// made). glibc's own tzset lock is invisible to ThreadSanitizer, which
// reported two teammates' commits, then two fast-forwards, at once.
std::mutex& ZoneMutex() {
  static std::mutex mu;
  return mu;
}

// `who` as a signature: its fixed date ("SECONDS +ZONE") or now, in the
// local zone as git dates it.
Status Sign(const Identity& who, Signature& out) {
  if (who.date.empty()) {
    std::lock_guard<std::mutex> lock(ZoneMutex());
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    if (localtime_r(&now, &local) == nullptr) return Status::FailedPrecondition("the local time zone");
    const int offset = static_cast<int>(local.tm_gmtoff / 60);
    if (git_signature_new(&out.p, who.name.c_str(), who.email.c_str(), now, offset) != 0) {
      return Fallback("a signature");
    }
    return Status::Ok();
  }
  char* end = nullptr;
  const long long seconds = std::strtoll(who.date.c_str(), &end, 10);
  int offset = 0;
  if (end != nullptr && *end == ' ' && (end[1] == '+' || end[1] == '-')) {
    const int hhmm = std::atoi(end + 2);
    offset = (hhmm / 100 * 60 + hhmm % 100) * (end[1] == '-' ? -1 : 1);
  }
  if (git_signature_new(&out.p, who.name.c_str(), who.email.c_str(), seconds, offset) != 0) {
    return Fallback("a signature");
  }
  return Status::Ok();
}

Status TreeOf(git_repository* repo, const git_oid& commit, Tree& out) {
  Commit c;
  if (git_commit_lookup(&c.p, repo, &commit) != 0) return Fallback("commit " + IdText(commit));
  if (git_commit_tree(&out.p, c.p) != 0) return Fallback("the tree of " + IdText(commit));
  return Status::Ok();
}

// One side's changes from the merge base, rename detection off.
struct Side {
  std::vector<git_tree_update> changes;  // added or changed files, ids and modes
  std::vector<std::string> paths;        // every path the side touches (owns the strings `changes` point at)
  bool adds = false, deletes = false, other = false;  // `other`: a submodule, a type changed
};

Status ReadSide(git_repository* repo, git_tree* base, git_tree* side, Side& out) {
  Diff d;
  git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
  if (git_diff_tree_to_tree(&d.p, repo, base, side, &opts) != 0) return Fallback("a diff");
  const size_t n = git_diff_num_deltas(d.p);
  out.paths.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(d.p, i);
    out.paths.emplace_back(delta->new_file.path != nullptr ? delta->new_file.path : delta->old_file.path);
    out.adds = out.adds || delta->status == GIT_DELTA_ADDED;
    out.deletes = out.deletes || delta->status == GIT_DELTA_DELETED;
    const bool file = delta->status == GIT_DELTA_ADDED || delta->status == GIT_DELTA_MODIFIED;
    if (!file && delta->status != GIT_DELTA_DELETED) out.other = true;
    if (delta->new_file.mode == GIT_FILEMODE_COMMIT || delta->old_file.mode == GIT_FILEMODE_COMMIT) out.other = true;
    // `paths` is never reallocated (reserved above): its strings stay put.
    if (file) out.changes.push_back({GIT_TREE_UPDATE_UPSERT, delta->new_file.id,
                                     static_cast<git_filemode_t>(delta->new_file.mode), out.paths.back().c_str()});
  }
  return Status::Ok();
}

// Whether a path of `a` is one of `b`'s or a folder above one of `b`'s.
bool InTheWay(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::set<std::string> own(a.begin(), a.end());
  for (const std::string& p : b) {
    if (own.count(p) != 0) return true;
    for (size_t slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1)) {
      if (own.count(p.substr(0, slash)) != 0) return true;
    }
  }
  return false;
}

// A host killed while libgit2 held a lock (a worktree's index or branch,
// the target, the notes ref) leaves its lock file behind, where a killed
// host's git child would have gone on and let it go: every later write
// there would fail. A lock file is a dead process's when it is older than
// this process (its mates writer is this host now: a worktree's under the
// worktree's own lock, the queue's refs in the lead's host), or older than
// kStaleLockS (no git holds a ref or an index for that long).
constexpr double kStaleLockS = 30;
const fs::file_time_type kProcessStart = fs::file_time_type::clock::now();

void ClearStaleLock(const fs::path& lock) {
  std::error_code ec;
  const auto at = fs::last_write_time(lock, ec);
  if (ec) return;
  const double age = std::chrono::duration<double>(fs::file_time_type::clock::now() - at).count();
  if (at < kProcessStart || age > kStaleLockS) fs::remove(lock, ec);
}

// The lock files of a worktree's index and of the branch its HEAD names.
void ClearStaleLocks(git_repository* repo) {
  ClearStaleLock(fs::path(git_repository_path(repo)) / "index.lock");
  Reference head;
  // HEAD is in the worktree's admin folder: only a branch's own name,
  // never a path an agent could aim elsewhere, names a lock to remove.
  const char* branch = git_reference_lookup(&head.p, repo, "HEAD") == 0 ? git_reference_symbolic_target(head.p) : nullptr;
  if (branch != nullptr && std::string_view(branch).rfind("refs/heads/", 0) == 0 &&
      std::string_view(branch).find("..") == std::string_view::npos &&
      git_reference_is_valid_name(branch) == 1) {
    ClearStaleLock(fs::path(git_repository_commondir(repo)) /
                   (std::string(git_reference_symbolic_target(head.p)) + ".lock"));
  }
}

}  // namespace

Result<InProcessRepo> InProcessRepo::Open(const fs::path& dir) {
  Init();
  // A folder libgit2 refused once is git's from then on: asked again, it
  // would refuse again (and libgit2 1.5 leaks a little at each refusal of
  // an extension, scripts/lsan-suppressions.txt).
  static std::mutex mu;
  static std::set<std::string> refused;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (refused.count(dir.string()) != 0) return Status::FailedPrecondition("libgit2 cannot open " + dir.string());
  }
  git_repository* repo = nullptr;
  if (const int rc = git_repository_open_ext(&repo, dir.c_str(), 0, nullptr); rc != 0) {
    Status why = Fallback("open " + dir.string());
    std::lock_guard<std::mutex> lock(mu);
    // Not a repository (yet): asked again when it may be one.
    if (rc != GIT_ENOTFOUND && refused.size() < 1024) refused.insert(dir.string());
    return why;
  }
  return InProcessRepo(repo);
}

InProcessRepo::InProcessRepo(InProcessRepo&& o) noexcept : repo_(o.repo_) { o.repo_ = nullptr; }

InProcessRepo& InProcessRepo::operator=(InProcessRepo&& o) noexcept {
  if (this != &o) {
    if (repo_ != nullptr) git_repository_free(repo_);
    repo_ = o.repo_;
    o.repo_ = nullptr;
  }
  return *this;
}

InProcessRepo::~InProcessRepo() {
  if (repo_ != nullptr) git_repository_free(repo_);
}

Result<std::string> InProcessRepo::Resolve(const std::string& ref) {
  Object obj;
  const int rc = git_revparse_single(&obj.p, repo_, (ref + "^{commit}").c_str());
  if (rc == GIT_ENOTFOUND) return std::string();
  if (rc != 0) return Fallback("rev-parse " + ref);
  return IdText(*git_object_id(obj.p));
}

Result<bool> InProcessRepo::IsAncestor(const std::string& ancestor, const std::string& commit) {
  MATES_ASSIGN_OR_RETURN(git_oid a, ParseId(ancestor));
  MATES_ASSIGN_OR_RETURN(git_oid c, ParseId(commit));
  if (git_oid_equal(&a, &c)) return true;
  const int rc = git_graph_descendant_of(repo_, &c, &a);
  if (rc < 0) return Fallback("is " + ancestor + " an ancestor");
  return rc == 1;
}

Result<std::optional<std::string>> InProcessRepo::MergeUnion(const std::string& ours, const std::string& theirs) {
  MATES_ASSIGN_OR_RETURN(git_oid o, ParseId(ours));
  MATES_ASSIGN_OR_RETURN(git_oid t, ParseId(theirs));
  git_oidarray bases{};
  const int rc = git_merge_bases(&bases, repo_, &o, &t);
  if (rc == GIT_ENOTFOUND) return std::optional<std::string>();  // no common history: git says so
  if (rc != 0) return Fallback("merge bases");
  const bool one = bases.count == 1;
  const git_oid base = one ? bases.ids[0] : git_oid{};
  git_oidarray_dispose(&bases);
  if (!one) return std::optional<std::string>();  // a criss-cross: git's recursive merge decides
  Tree base_tree, our_tree, their_tree;
  MATES_RETURN_IF_ERROR(TreeOf(repo_, base, base_tree));
  MATES_RETURN_IF_ERROR(TreeOf(repo_, o, our_tree));
  MATES_RETURN_IF_ERROR(TreeOf(repo_, t, their_tree));
  Side our_side, their_side;
  MATES_RETURN_IF_ERROR(ReadSide(repo_, base_tree.p, their_tree.p, their_side));
  if (their_side.deletes || their_side.other) return std::optional<std::string>();
  MATES_RETURN_IF_ERROR(ReadSide(repo_, base_tree.p, our_tree.p, our_side));
  if (our_side.other || (our_side.deletes && their_side.adds)) return std::optional<std::string>();
  if (InTheWay(our_side.paths, their_side.paths) || InTheWay(their_side.paths, our_side.paths)) {
    return std::optional<std::string>();
  }
  if (their_side.changes.empty()) return std::optional<std::string>(IdText(*git_tree_id(our_tree.p)));
  git_oid merged;
  if (git_tree_create_updated(&merged, repo_, our_tree.p, their_side.changes.size(), their_side.changes.data()) != 0) {
    return Fallback("a merged tree");
  }
  return std::optional<std::string>(IdText(merged));
}

Result<std::string> InProcessRepo::CommitTree(const std::string& tree, const std::vector<std::string>& parents,
                                              const Identity& who, const std::string& message) {
  MATES_ASSIGN_OR_RETURN(git_oid tree_id, ParseId(tree));
  Tree t;
  if (git_tree_lookup(&t.p, repo_, &tree_id) != 0) return Fallback("tree " + tree);
  std::vector<std::unique_ptr<Commit>> owned;
  std::vector<const git_commit*> ps;
  for (const std::string& p : parents) {
    MATES_ASSIGN_OR_RETURN(git_oid id, ParseId(p));
    owned.push_back(std::make_unique<Commit>());
    if (git_commit_lookup(&owned.back()->p, repo_, &id) != 0) return Fallback("commit " + p);
    ps.push_back(owned.back()->p);
  }
  Signature sig;
  MATES_RETURN_IF_ERROR(Sign(who, sig));
  const std::string text = message.empty() || message.back() != '\n' ? message + "\n" : message;
  git_oid made;
  if (git_commit_create(&made, repo_, nullptr, sig.p, sig.p, nullptr, text.c_str(), t.p, ps.size(), ps.data()) != 0) {
    return Fallback("commit");
  }
  return IdText(made);
}

Status InProcessRepo::WriteNote(const std::string& notes_ref, const std::string& commit, const std::string& text,
                                const Identity& who) {
  MATES_ASSIGN_OR_RETURN(git_oid id, ParseId(commit));
  Signature sig;
  MATES_RETURN_IF_ERROR(Sign(who, sig));
  const std::string body = text.empty() || text.back() != '\n' ? text + "\n" : text;
  ClearStaleLock(fs::path(git_repository_commondir(repo_)) / (notes_ref + ".lock"));
  git_oid note;
  std::lock_guard<std::mutex> dated(ZoneMutex());
  const int rc = git_note_create(&note, repo_, notes_ref.c_str(), sig.p, sig.p, &id, body.c_str(), /*force=*/1);
  if (rc == GIT_ELOCKED || rc == GIT_EMODIFIED) return Status::Unavailable(LastError("the notes ref is busy"));
  if (rc != 0) return Fallback("a note");
  return Status::Ok();
}

Status InProcessRepo::ReadHeadInto(const fs::path& index) {
  Object head;
  if (git_revparse_single(&head.p, repo_, "HEAD^{tree}") != 0) return Fallback("HEAD's tree");
  Index idx;
  if (git_index_open(&idx.p, index.c_str()) != 0) return Fallback("index " + index.string());
  if (git_index_read_tree(idx.p, reinterpret_cast<git_tree*>(head.p)) != 0 || git_index_write(idx.p) != 0) {
    return Fallback("read-tree HEAD");
  }
  return Status::Ok();
}

Result<std::string> InProcessRepo::CommitIndex(const fs::path& index, const Identity& who,
                                               const std::string& message) {
  // A merge (or a cherry-pick, a revert) under way: its commit is git's,
  // with the parents and clean-up its state files say.
  if (git_repository_state(repo_) != GIT_REPOSITORY_STATE_NONE) {
    return Status::FailedPrecondition("a merge is under way: git commits it");
  }
  ClearStaleLocks(repo_);
  Index idx;
  if (git_index_open(&idx.p, index.c_str()) != 0) return Fallback("index " + index.string());
  git_oid tree_id;
  if (git_index_write_tree_to(&tree_id, idx.p, repo_) != 0) return Fallback("write-tree");
  Object head;
  if (git_revparse_single(&head.p, repo_, "HEAD^{commit}") != 0) return Fallback("HEAD");
  const git_commit* parent = reinterpret_cast<const git_commit*>(head.p);
  Tree head_tree, tree;
  if (git_commit_tree(&head_tree.p, parent) != 0 || git_tree_lookup(&tree.p, repo_, &tree_id) != 0) {
    return Fallback("the trees");
  }
  if (git_oid_equal(&tree_id, git_tree_id(head_tree.p))) return std::string();  // nothing to commit
  Diff d;
  git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
  if (git_diff_tree_to_tree(&d.p, repo_, head_tree.p, tree.p, &opts) != 0) return Fallback("a diff");
  for (size_t i = 0, n = git_diff_num_deltas(d.p); i < n; ++i) {
    const git_diff_delta* delta = git_diff_get_delta(d.p, i);
    if (delta->new_file.mode == GIT_FILEMODE_COMMIT || delta->old_file.mode == GIT_FILEMODE_COMMIT) {
      return Status::FailedPrecondition("a submodule changes: git decides");
    }
  }
  git_buf text = GIT_BUF_INIT;
  if (git_message_prettify(&text, message.c_str(), /*strip_comments=*/0, '#') != 0) return Fallback("the message");
  const std::string cleaned(text.ptr, text.size);
  git_buf_dispose(&text);
  if (cleaned.empty()) return Status::FailedPrecondition("an empty commit message: git decides");
  Signature sig;
  MATES_RETURN_IF_ERROR(Sign(who, sig));
  git_oid made;
  // "HEAD": its branch moves, from `parent` only (else GIT_EMODIFIED).
  std::lock_guard<std::mutex> dated(ZoneMutex());
  if (git_commit_create(&made, repo_, "HEAD", sig.p, sig.p, nullptr, cleaned.c_str(), tree.p, 1, &parent) != 0) {
    return Fallback("commit");
  }
  return IdText(made);
}

Result<bool> InProcessRepo::FastForward(const std::string& target, const std::string& message) {
  if (git_repository_state(repo_) != GIT_REPOSITORY_STATE_NONE || git_repository_head_detached(repo_) != 0) {
    return false;
  }
  ClearStaleLocks(repo_);
  Reference head;
  if (git_repository_head(&head.p, repo_) != 0 || git_reference_target(head.p) == nullptr) return false;
  const git_oid from = *git_reference_target(head.p);
  MATES_ASSIGN_OR_RETURN(std::string to_text, Resolve(target));
  if (to_text.empty()) return false;
  MATES_ASSIGN_OR_RETURN(git_oid to, ParseId(to_text));
  if (git_oid_equal(&from, &to)) return true;
  MATES_ASSIGN_OR_RETURN(bool ahead_of_head, IsAncestor(IdText(from), to_text));
  if (!ahead_of_head) return false;
  Object to_commit, from_commit;
  if (git_object_lookup(&to_commit.p, repo_, &to, GIT_OBJECT_COMMIT) != 0 ||
      git_object_lookup(&from_commit.p, repo_, &from, GIT_OBJECT_COMMIT) != 0) {
    return Fallback("the commits");
  }
  // SAFE: what differs between HEAD and the target is written, unless a
  // local change or an untracked file is in the way (then nothing is:
  // libgit2 finds every conflict before it writes).
  git_checkout_options opts = GIT_CHECKOUT_OPTIONS_INIT;
  opts.checkout_strategy = GIT_CHECKOUT_SAFE;
  const int rc = git_checkout_tree(repo_, to_commit.p, &opts);
  if (rc == GIT_ECONFLICT) return false;
  if (rc != 0) return Fallback("checkout");
  Reference moved;
  std::unique_lock<std::mutex> dated(ZoneMutex());
  if (git_reference_create_matching(&moved.p, repo_, git_reference_name(head.p), &to, /*force=*/1, &from,
                                    message.c_str()) != 0) {
    dated.unlock();
    // The branch moved meanwhile: its files go back to HEAD's.
    Status why = Fallback("moving " + std::string(git_reference_name(head.p)));
    (void)git_checkout_tree(repo_, from_commit.p, &opts);
    return why;
  }
  return true;
}

Result<bool> InProcessRepo::MoveRef(const std::string& ref, const std::string& now, const std::string& old,
                                    const std::string& message) {
  MATES_ASSIGN_OR_RETURN(git_oid to, ParseId(now));
  MATES_ASSIGN_OR_RETURN(git_oid from, ParseId(old));
  ClearStaleLock(fs::path(git_repository_commondir(repo_)) / (ref + ".lock"));
  Reference moved;
  std::unique_lock<std::mutex> dated(ZoneMutex());
  const int rc = git_reference_create_matching(&moved.p, repo_, ref.c_str(), &to, /*force=*/1, &from, message.c_str());
  dated.unlock();
  if (rc == GIT_EMODIFIED || rc == GIT_ELOCKED || rc == GIT_ENOTFOUND) return false;
  if (rc != 0) return Fallback("update-ref " + ref);
  return true;
}

}  // namespace mates::git
