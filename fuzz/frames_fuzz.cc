// Frames a model reads cannot be forged (agent/frames.h, DESIGN §19), for
// any bytes: neutralising is done in one pass (what it leaves holds no
// frame it would neutralise again), it never grows text by more than it
// replaces, and a message framed with the content holds exactly its own
// two tags as NeutraliseFrames sees them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "agent/conversation.h"
#include "agent/frames.h"
#include "store/message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string once = mates::agent::NeutraliseFrames(text);
  if (once.size() > text.size()) std::abort();  // an opener becomes one '['
  if (mates::agent::NeutraliseFrames(once) != once) std::abort();
  mates::Message m;
  m.sender = "w1";
  m.type = mates::MessageType::kMessage;
  m.content = text;
  m.summary = text;
  const std::string framed = mates::agent::FormatTeammateMessage(m, "");
  // Neutralising the whole frame touches exactly mates' own two tags.
  const std::string again = mates::agent::NeutraliseFrames(framed);
  size_t changed = 0;
  for (size_t i = 0; i < framed.size() && i < again.size(); ++i) changed += framed[i] != again[i] ? 1 : 0;
  if (again.size() != framed.size() || changed != 2) std::abort();
  (void)mates::agent::FrameAttribute(text);
  return 0;
}
