// Secrets: the API keys a mates process holds (DESIGN §10).
//
// Keys come from the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY,
// GEMINI_API_KEY, GOOGLE_API_KEY) or from a file named there
// (ANTHROPIC_API_KEY_FILE, …: the
// whole file, trailing newline dropped), once, at start-up. A process that
// runs model-written commands then Scrub()s them: they leave its
// environment, their bytes are overwritten in the environment block the
// kernel shows as /proc/<pid>/environ (unsetenv alone leaves them there),
// and the process is made non-dumpable (other processes of the same user
// can no longer read its /proc files or attach to it; root still can, which
// no user-space measure prevents).
//
// Whatever crosses a boundary — a tool's result, a server's error text, a
// log line, a journal line — goes through Redact(): every occurrence of a
// key becomes "[redacted]", and so does each of its common encodings: hex
// (either case), URL-encoding, and base64 (standard and URL-safe, at each
// of the three alignments it can have inside a longer base64 text, less
// the edge characters its neighbours share). Keys shorter than 8
// characters are held but not redacted (they would blank ordinary words).
//
// The files keys were read from are remembered (KeyFiles): the sandbox
// hides them (DESIGN §26).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace mates {

class Secrets {
 public:
  // The variables read: each NAME, and NAME_FILE.
  static constexpr const char* kNames[] = {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY",
                                           "GOOGLE_API_KEY"};

  // Reads the keys (NAME_FILE wins over NAME when both are set), replacing
  // what an earlier Load read. A _FILE that cannot be read is an error
  // naming it.
  static Status Load();
  // Removes the keys from the environment and the environment block, and
  // makes the process non-dumpable. Call before starting any thread.
  static void Scrub();
  // The real paths of the NAME_FILE files the keys were read from.
  static std::vector<std::string> KeyFiles();
  // The key held under `name` ("" if none).
  static std::string Get(std::string_view name);
  // Adds a value to redact (tests; keys read by other means).
  static void Add(std::string_view name, std::string value);
  // `text` with every held key replaced by "[redacted]".
  static std::string Redact(std::string_view text);
  static void RedactInPlace(std::string* text);
};

}  // namespace mates
