#include "core/secrets.h"

#include <sys/prctl.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "core/files.h"

extern char** environ;

namespace mates {
namespace {

constexpr size_t kMinRedacted = 8;
constexpr std::string_view kRedacted = "[redacted]";

struct Store {
  std::shared_mutex mu;
  std::map<std::string, std::string, std::less<>> keys;  // guarded by mu
};

Store& TheStore() {
  static auto* store = new Store();
  return *store;
}

// Removes every `name=` entry from the environment, then overwrites its
// bytes (name included) in place, so they are gone from the block that
// /proc/<pid>/environ reads too.
void WipeVariable(const char* name) {
  const size_t n = std::strlen(name);
  std::vector<char*> entries;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') entries.push_back(*e);
  }
  ::unsetenv(name);
  for (char* entry : entries) std::memset(entry, 0, std::strlen(entry));
}

}  // namespace

Status Secrets::Load() {
  Store& st = TheStore();
  for (const char* name : kNames) {
    std::string value;
    std::string file_var = std::string(name) + "_FILE";
    if (const char* file = std::getenv(file_var.c_str()); file != nullptr && *file != '\0') {
      auto data = ReadFile(file);
      if (!data.ok()) return Status::InvalidArgument(file_var + ": cannot read " + file + ": " + data.status().message());
      value = std::move(*data);
      while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
    } else if (const char* v = std::getenv(name); v != nullptr) {
      value = v;
    }
    std::unique_lock lock(st.mu);
    if (value.empty()) {
      st.keys.erase(name);  // a key unset since the last Load
    } else {
      st.keys[name] = std::move(value);
    }
  }
  return Status::Ok();
}

void Secrets::Scrub() {
  for (const char* name : kNames) WipeVariable(name);
  (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

std::string Secrets::Get(std::string_view name) {
  Store& st = TheStore();
  std::shared_lock lock(st.mu);
  auto it = st.keys.find(name);
  return it == st.keys.end() ? "" : it->second;
}

void Secrets::Add(std::string_view name, std::string value) {
  Store& st = TheStore();
  std::unique_lock lock(st.mu);
  st.keys[std::string(name)] = std::move(value);
}

void Secrets::RedactInPlace(std::string* text) {
  Store& st = TheStore();
  std::shared_lock lock(st.mu);
  for (const auto& [name, key] : st.keys) {
    if (key.size() < kMinRedacted) continue;
    for (size_t pos = text->find(key); pos != std::string::npos; pos = text->find(key, pos + kRedacted.size())) {
      text->replace(pos, key.size(), kRedacted);
    }
  }
}

std::string Secrets::Redact(std::string_view text) {
  std::string out(text);
  RedactInPlace(&out);
  return out;
}

}  // namespace mates
