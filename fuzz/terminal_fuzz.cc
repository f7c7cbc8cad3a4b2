// What a person's terminal is shown (DESIGN §26), for any bytes in any
// chunks: TerminalSafeBuf lets through no control character but newline
// and tab, no ESC but a colour sequence (ESC [ digits and ';' m), no C1
// control in UTF-8 (0xC2 0x80-0x9F), and changes nothing in text without
// them; ForTerminal leaves none either. And a held key is redacted from
// any text that carries it, in its text, hex or base64 form.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "core/secrets.h"
#include "core/text.h"

namespace {

bool SafeForTerminal(const std::string& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    if (c == 0xC2 && i + 1 < out.size()) {
      const auto next = static_cast<unsigned char>(out[i + 1]);
      if (next >= 0x80 && next <= 0x9F) return false;
    }
    if (c == 0x1B) {
      if (i + 1 >= out.size() || out[i + 1] != '[') return false;
      size_t j = i + 2;
      while (j < out.size() && ((out[j] >= '0' && out[j] <= '9') || out[j] == ';')) ++j;
      if (j >= out.size() || out[j] != 'm') return false;
      i = j;
      continue;
    }
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) return false;
  }
  return true;
}

bool HasControl(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F || c == 0xC2) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 17;  // how the stream is written
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::ostringstream sink;
  {
    mates::TerminalSafeBuf safe(sink.rdbuf());
    for (size_t at = 0; at < text.size(); at += chunk) {
      safe.sputn(text.data() + at, static_cast<std::streamsize>(std::min(chunk, text.size() - at)));
      if (at % 3 == 0) safe.pubsync();
    }
  }
  const std::string out = sink.str();
  if (!SafeForTerminal(out)) std::abort();
  if (!HasControl(text) && out != text) std::abort();
  if (!SafeForTerminal(mates::ForTerminal(text))) std::abort();

  static const std::string kKey = "sk-fuzz-0123456789abcdef";
  static const bool added = (mates::Secrets::Add("FUZZ_KEY", kKey), true);
  (void)added;
  if (mates::Secrets::Redact(text + kKey + text).find(kKey) != std::string::npos) std::abort();
  // Base64 of text that carries the key, at whatever alignment it falls.
  if (mates::Secrets::Redact(mates::Base64Unpadded(text + kKey, text.size() % 2 == 0)).find("[redacted]") ==
      std::string::npos) {
    std::abort();
  }
  return 0;
}
