// libFuzzer target: the flight recorder's readers of anyone's files
// (DESIGN §31). The first byte chooses: a bundle (`mates import`: a
// gzipped tar, unpacked into a scratch workspace that is removed after),
// or a journal read into a team's report (`mates report`), rendered as
// Markdown, JSON and HTML, and into the calls a replay answers (`mates
// replay`), masked as a replay compares them.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/process_env.h"
#include "core/files.h"
#include "report/bundle.h"
#include "replay/normalise.h"
#include "replay/record.h"
#include "report/report.h"
#include "store/roster.h"
#include "store/team_store.h"

using namespace mates;

namespace {

const fs::path& Scratch() {
  static const fs::path dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "mates-record-fuzz-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    return fs::path(tmpl);
  }();
  return dir;
}

// The target's Env (core/env.h): one, made at the first input and never
// destroyed, as a program's.
const Env& FuzzEnv() {
  static const ProcessEnv* env = new ProcessEnv();
  return env->env();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const fs::path ws = Scratch() / "ws";
  std::error_code ec;
  fs::remove_all(ws, ec);
  fs::create_directories(ws, ec);
  if (data[0] % 2 == 0) {
    const fs::path file = Scratch() / "in.tgz";
    if (!WriteFileAtomic(file, body).ok()) std::abort();
    (void)report::ImportBundle(file, Workspace(ws));
  } else {
    Workspace w(ws);
    if (!Roster(w).CreateTeam("t").ok()) std::abort();
    if (!EnsureDir(w.AgentsDir("t")).ok() || !WriteFileAtomic(w.JournalPath("t", "lead"), body).ok()) std::abort();
    auto store = FileTeamStore(w, FuzzEnv());
    std::vector<std::string> notes;
    const auto agent = replay::ReadAgent("lead", {{"t", std::string(body)}}, data[0] % 4 == 1, &notes);
    replay::IdMap ids;
    for (const auto& c : agent.calls) {
      for (const auto& r : c.results) (void)ids.Learn(r.text, replay::Masked(r.text, {"/w"}), {"/w"});
      for (const auto& b : c.reply.content) (void)ids.Apply(b.input_json);
    }
    (void)replay::FirstWords(body);
    (void)replay::CameFrom(body);
    (void)replay::MovedTo(body);
    auto r = report::Build(*store, w, "t", "fuzzed", FuzzEnv().prices);
    if (r.ok()) {
      (void)report::Markdown(*r);
      (void)DumpJson(report::ToJson(*r));
      (void)report::Html(*r);
    }
  }
  return 0;
}
