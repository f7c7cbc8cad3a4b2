#include "core/secrets.h"

#include <sys/prctl.h>
#include <stdlib.h>

#include <climits>
#include <cstdlib>
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "core/files.h"
#include "core/text.h"

extern char** environ;

namespace mates {
namespace {

constexpr size_t kMinRedacted = 8;
constexpr std::string_view kRedacted = "[redacted]";

struct Store {
  std::shared_mutex mu;
  std::map<std::string, std::string, std::less<>> keys;  // guarded by mu
  std::vector<std::string> forms;                        // guarded by mu: every key's encodings, longest first
  std::vector<std::string> files;                        // guarded by mu
};

// The forms a key takes in text a model may see: itself, hex, URL-encoded,
// and the characters of its base64 that depend on it alone at each offset.
std::vector<std::string> FormsOf(const std::string& key) {
  std::vector<std::string> out = {key};
  static const char* const kHexDigits[] = {"0123456789abcdef", "0123456789ABCDEF"};
  for (const char* digits : kHexDigits) {
    std::string hex;
    for (unsigned char c : key) hex += {digits[c >> 4], digits[c & 15]};
    out.push_back(hex);
  }
  std::string url;
  for (unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      url += static_cast<char>(c);
    } else {
      url += {'%', kHexDigits[1][c >> 4], kHexDigits[1][c & 15]};
    }
  }
  out.push_back(url);
  for (bool url_safe : {false, true}) {
    for (size_t k = 0; k < 3; ++k) {
      // k bytes before it: the characters wholly made of its bits.
      const std::string enc = Base64Unpadded(std::string(k, '\0') + key, url_safe);
      const size_t first = (8 * k + 5) / 6;
      const size_t last = 8 * (k + key.size()) / 6;  // one past
      if (last > first) out.push_back(enc.substr(first, last - first));
    }
  }
  return out;
}

void RebuildFormsLocked(Store& st) {
  st.forms.clear();
  for (const auto& [name, key] : st.keys) {
    if (key.size() < kMinRedacted) continue;
    for (auto& f : FormsOf(key)) st.forms.push_back(std::move(f));
  }
  std::sort(st.forms.begin(), st.forms.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  st.forms.erase(std::unique(st.forms.begin(), st.forms.end()), st.forms.end());
}

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
  {
    std::unique_lock lock(st.mu);
    st.files.clear();
  }
  for (const char* name : kNames) {
    std::string value;
    std::string file_var = std::string(name) + "_FILE";
    if (const char* file = std::getenv(file_var.c_str()); file != nullptr && *file != '\0') {
      auto data = ReadFile(file);
      if (!data.ok()) return Status::InvalidArgument(file_var + ": cannot read " + file + ": " + data.status().message());
      value = std::move(*data);
      while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
      char real[PATH_MAX];
      std::unique_lock lock(st.mu);
      st.files.push_back(::realpath(file, real) != nullptr ? real : file);
    } else if (const char* v = std::getenv(name); v != nullptr) {
      value = v;
    }
    std::unique_lock lock(st.mu);
    if (value.empty()) {
      st.keys.erase(name);  // a key unset since the last Load
    } else {
      st.keys[name] = std::move(value);
    }
    RebuildFormsLocked(st);
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
  RebuildFormsLocked(st);
}

std::vector<std::string> Secrets::KeyFiles() {
  Store& st = TheStore();
  std::shared_lock lock(st.mu);
  return st.files;
}

void Secrets::RedactInPlace(std::string* text) {
  Store& st = TheStore();
  std::shared_lock lock(st.mu);
  for (const auto& form : st.forms) {
    for (size_t pos = text->find(form); pos != std::string::npos; pos = text->find(form, pos + kRedacted.size())) {
      text->replace(pos, form.size(), kRedacted);
    }
  }
}

std::string Secrets::Redact(std::string_view text) {
  std::string out(text);
  RedactInPlace(&out);
  return out;
}

}  // namespace mates
