// See bundle.h.
#include "report/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/files.h"
#include "core/names.h"

namespace mates::report {
namespace {

constexpr size_t kPiece = 1 << 20;

struct ArchiveFree {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct ReaderFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct EntryFree {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

Status ArchiveError(archive* a, const std::string& what) {
  const char* said = archive_error_string(a);
  return Status::IOError(what + ": " + (said != nullptr ? said : "libarchive failed"));
}

// One entry: its header, then its bytes (`size` of them, read from `fd` if
// it is open, else `data`).
Status AddEntry(archive* a, const std::string& name, int fd, std::string_view data, uint64_t size) {
  std::unique_ptr<archive_entry, EntryFree> e(archive_entry_new());
  archive_entry_set_pathname(e.get(), name.c_str());
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_perm(e.get(), 0644);
  archive_entry_set_size(e.get(), static_cast<la_int64_t>(size));
  archive_entry_set_mtime(e.get(), static_cast<time_t>(WallSeconds()), 0);
  if (archive_write_header(a, e.get()) != ARCHIVE_OK) return ArchiveError(a, "bundle " + name);
  if (fd < 0) {
    if (archive_write_data(a, data.data(), data.size()) != static_cast<la_ssize_t>(data.size())) {
      return ArchiveError(a, "bundle " + name);
    }
    return Status::Ok();
  }
  std::vector<char> buf(kPiece);
  for (uint64_t left = size; left > 0;) {
    const ssize_t n = ::read(fd, buf.data(), std::min<uint64_t>(left, buf.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("read " + name, errno);
    if (n == 0) return Status::IOError(name + " shrank while it was bundled");
    if (archive_write_data(a, buf.data(), static_cast<size_t>(n)) != n) return ArchiveError(a, "bundle " + name);
    left -= static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status AddFile(archive* a, const BundleFile& f) {
  ScopedFd fd(::open(f.from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return Status::FromErrno("open " + f.from.string(), errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno("stat " + f.from.string(), errno);
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(f.from.string() + " is not a regular file");
  return AddEntry(a, f.name, fd.get(), {}, static_cast<uint64_t>(st.st_size));
}

// A name a bundle may hold for `team`: the manifest, the report, the git
// bundle, or a path below the team's two folders without `.`, `..` or an
// empty part.
Status CheckName(const std::string& name, const std::string& team) {
  auto refuse = [&](const std::string& why) {
    return Status::InvalidArgument("the bundle's entry '" + name.substr(0, 120) + "' " + why);
  };
  if (name.empty() || name.size() > kMaxBundlePath) return refuse("has no name or one over 512 bytes");
  if (name == "report.html" || name == "repo.bundle") return Status::Ok();
  const std::string teams = ".teams/" + team + "/", tasks = ".tasks/" + team + "/";
  const bool below = name.compare(0, teams.size(), teams) == 0 || name.compare(0, tasks.size(), tasks) == 0;
  if (!below) return refuse("is outside the team's folders (.teams/" + team + ", .tasks/" + team + ")");
  size_t start = name.find('/', 7) + 1;  // past ".teams/" or ".tasks/" and the team
  for (size_t end; start <= name.size(); start = end + 1) {
    end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    const std::string part = name.substr(start, end - start);
    if (part.empty() && end == name.size()) break;  // a folder's trailing slash
    if (part.empty() || part == "." || part == ".." || part.size() > 255) return refuse("has a part that escapes");
  }
  return Status::Ok();
}

// Writes a new file at `root`/`name` (its folders made as needed, none of
// them a link: all were made here) from the reader's data.
Result<uint64_t> Extract(archive* a, const fs::path& root, const std::string& name, uint64_t size) {
  const fs::path path = root / name;
  MATES_RETURN_IF_ERROR(EnsureDir(path.parent_path()));
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    if (errno == EEXIST) return Status::InvalidArgument("the bundle holds '" + name + "' twice");
    return Status::FromErrno("create " + path.string(), errno);
  }
  std::vector<char> buf(kPiece);
  uint64_t got = 0;
  for (;;) {
    const la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
    if (n < 0) return ArchiveError(a, "read the bundle's '" + name + "'");
    if (n == 0) break;
    got += static_cast<uint64_t>(n);
    if (got > size) return Status::InvalidArgument("the bundle's '" + name + "' is longer than its header says");
    MATES_RETURN_IF_ERROR(WriteAll(fd.get(), std::string_view(buf.data(), static_cast<size_t>(n)), path.c_str()));
  }
  return got;
}

// The manifest: the first entry, ≤ 1 MiB.
Result<BundleManifest> ReadManifest(archive* a) {
  archive_entry* e = nullptr;
  const int r = archive_read_next_header(a, &e);
  if (r == ARCHIVE_EOF) return Status::InvalidArgument("the bundle is empty");
  if (r != ARCHIVE_OK) {
    const char* said = archive_error_string(a);
    return Status::InvalidArgument(std::string("not a mates bundle (a gzipped tar): ") +
                                   (said != nullptr ? said : "unreadable"));
  }
  const char* name = archive_entry_pathname(e);
  if (name == nullptr || std::string(name) != "bundle.json" || archive_entry_filetype(e) != AE_IFREG) {
    return Status::InvalidArgument("not a mates bundle: its first entry is not bundle.json");
  }
  if (archive_entry_size(e) > (1 << 20)) return Status::InvalidArgument("the bundle's bundle.json is over 1 MiB");
  std::string text(static_cast<size_t>(std::max<la_int64_t>(archive_entry_size(e), 0)), '\0');
  if (archive_read_data(a, text.data(), text.size()) != static_cast<la_ssize_t>(text.size())) {
    return ArchiveError(a, "read the bundle's bundle.json");
  }
  MATES_ASSIGN_OR_RETURN(Json j, ParseJson(text));
  return BundleManifestFromJson(j);
}

// Every entry after the manifest, into `root`, each checked first.
Status ExtractAll(archive* a, const fs::path& root, Imported* in) {
  archive_entry* e = nullptr;
  for (int r; (r = archive_read_next_header(a, &e)) != ARCHIVE_EOF;) {
    if (r != ARCHIVE_OK) {
      const char* said = archive_error_string(a);
      return Status::InvalidArgument(std::string("the bundle is damaged: ") + (said != nullptr ? said : "unreadable"));
    }
    const char* raw = archive_entry_pathname(e);
    const std::string name = raw == nullptr ? "" : raw;
    MATES_RETURN_IF_ERROR(CheckName(name, in->manifest.team));
    if (++in->files > kMaxBundleEntries) return Status::InvalidArgument("the bundle holds over 100,000 entries");
    const auto type = archive_entry_filetype(e);
    if (type == AE_IFDIR) {
      MATES_RETURN_IF_ERROR(EnsureDir(root / name));
      continue;
    }
    if (type != AE_IFREG || archive_entry_hardlink(e) != nullptr) {
      return Status::InvalidArgument("the bundle's entry '" + name + "' is not a regular file (links are refused)");
    }
    const la_int64_t size = archive_entry_size(e);
    if (size < 0 || static_cast<uint64_t>(size) > kMaxBundleEntryBytes) {
      return Status::InvalidArgument("the bundle's entry '" + name + "' is over 4 GiB");
    }
    MATES_ASSIGN_OR_RETURN(uint64_t got, Extract(a, root, name, static_cast<uint64_t>(size)));
    in->bytes += got;
    if (in->bytes > kMaxBundleBytes) return Status::InvalidArgument("the bundle unpacks to over 16 GiB");
  }
  return Status::Ok();
}

}  // namespace

Json BundleManifestToJson(const BundleManifest& m) {
  Json git = nullptr;
  if (!m.git_refs.empty()) git = {{"refs", m.git_refs}, {"head", m.git_head}};
  return {{"format", kBundleFormat}, {"version", kBundleVersion}, {"team", m.team}, {"state", m.state},
          {"from", m.from},          {"made", m.made},             {"mates", m.mates}, {"git", git}};
}

Result<BundleManifest> BundleManifestFromJson(const Json& j) {
  if (!j.is_object() || StringOr(j, "format") != kBundleFormat) {
    return Status::InvalidArgument("not a mates bundle: bundle.json has no \"format\": \"mates-bundle\"");
  }
  MATES_ASSIGN_OR_RETURN(int64_t version, JsonInt(j, "version", true));
  if (version != kBundleVersion) {
    return Status::InvalidArgument("a bundle of version " + std::to_string(version) + "; this mates reads version " +
                                   std::to_string(kBundleVersion));
  }
  BundleManifest m;
  MATES_ASSIGN_OR_RETURN(m.team, JsonString(j, "team", true));
  MATES_RETURN_IF_ERROR(ValidateName("the bundle's team name", m.team));
  m.state = StringOr(j, "state");
  m.from = StringOr(j, "from");
  m.mates = StringOr(j, "mates");
  MATES_ASSIGN_OR_RETURN(m.made, JsonNumber(j, "made", 0));
  const Json& git = FieldOr(j, "git");
  for (const auto& r : FieldOr(git, "refs")) {
    if (r.is_string() && m.git_refs.size() < 1000) m.git_refs.push_back(r.get<std::string>());
  }
  m.git_head = StringOr(git, "head");
  return m;
}

Result<std::vector<BundleFile>> TeamFiles(const Workspace& root, const std::string& team) {
  std::vector<BundleFile> out;
  for (const auto& [dir, prefix] : {std::pair{root.TeamDir(team), ".teams/" + team + "/"},
                                    std::pair{root.TasksDir(team), ".tasks/" + team + "/"}}) {
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
    if (ec) {
      if (ec == std::errc::no_such_file_or_directory) continue;
      return Status::IOError("list " + dir.string() + ": " + ec.message());
    }
    for (; it != end; it.increment(ec)) {
      if (ec) return Status::IOError("list " + dir.string() + ": " + ec.message());
      const std::string leaf = it->path().filename().string();
      if (it->is_directory(ec) && leaf == ".spares") {
        it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(ec) || it->is_symlink(ec) || leaf.ends_with(".lock")) continue;
      out.push_back({prefix + it->path().lexically_relative(dir).string(), it->path()});
    }
  }
  std::sort(out.begin(), out.end(), [](const BundleFile& a, const BundleFile& b) { return a.name < b.name; });
  return out;
}

Status WriteBundle(const fs::path& out, const BundleManifest& manifest, const std::string& report_html,
                   const std::vector<BundleFile>& files) {
  const fs::path spare = out.string() + ".part-" + std::to_string(::getpid());
  Status written = [&]() -> Status {
    std::unique_ptr<archive, ArchiveFree> a(archive_write_new());
    if (archive_write_add_filter_gzip(a.get()) != ARCHIVE_OK ||
        archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK ||
        archive_write_open_filename(a.get(), spare.c_str()) != ARCHIVE_OK) {
      return ArchiveError(a.get(), "write " + spare.string());
    }
    const std::string m = DumpJsonPretty(BundleManifestToJson(manifest)) + "\n";
    MATES_RETURN_IF_ERROR(AddEntry(a.get(), "bundle.json", -1, m, m.size()));
    MATES_RETURN_IF_ERROR(AddEntry(a.get(), "report.html", -1, report_html, report_html.size()));
    for (const auto& f : files) MATES_RETURN_IF_ERROR(AddFile(a.get(), f));
    if (archive_write_close(a.get()) != ARCHIVE_OK) return ArchiveError(a.get(), "write " + spare.string());
    return Status::Ok();
  }();
  std::error_code ec;
  if (written.ok()) fs::rename(spare, out, ec);
  if (!written.ok() || ec) fs::remove(spare, ec);
  if (!written.ok()) return written;
  return ec ? Status::IOError("rename " + spare.string() + " to " + out.string() + ": " + ec.message()) : Status::Ok();
}

Result<Imported> ImportBundle(const fs::path& file, const Workspace& ws) {
  std::unique_ptr<archive, ReaderFree> a(archive_read_new());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_format_tar(a.get());
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return Status::NotFound("no bundle file " + file.string());
  if (archive_read_open_filename(a.get(), file.c_str(), kPiece) != ARCHIVE_OK) {
    const char* said = archive_error_string(a.get());
    return Status::InvalidArgument(file.string() + " is not a mates bundle (a gzipped tar): " +
                                   (said != nullptr ? said : "unreadable"));
  }
  Imported in;
  MATES_ASSIGN_OR_RETURN(in.manifest, ReadManifest(a.get()));
  // Unpacked into a folder of its own, which becomes the archive whole.
  MATES_RETURN_IF_ERROR(EnsureDir(ArchivesDir(ws)));
  std::string tmpl = (ArchivesDir(ws) / ".importing-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::FromErrno("mkdtemp " + tmpl, errno);
  const fs::path staging = tmpl;
  Status done = ExtractAll(a.get(), staging, &in);
  if (done.ok()) {
    std::string manifest = DumpJsonPretty(BundleManifestToJson(in.manifest)) + "\n";
    done = WriteFileAtomic(staging / "bundle.json", manifest);
  }
  if (done.ok() && !fs::exists(Workspace(staging).ConfigPath(in.manifest.team), ec)) {
    done = Status::InvalidArgument("the bundle has no roster (.teams/" + in.manifest.team + "/config.json)");
  }
  if (done.ok()) {
    auto made = NewArchive(ws, in.manifest.team);
    done = made.status();
    if (made.ok()) {
      in.archive = *made;
      fs::rename(staging, made->root, ec);  // onto the empty folder that claimed the stamp
      if (ec) {
        fs::remove(made->root, ec);
        done = Status::IOError("rename " + staging.string() + ": " + ec.message());
      }
    }
  }
  if (!done.ok()) fs::remove_all(staging, ec);
  if (!done.ok()) return done;
  return in;
}

}  // namespace mates::report
