// Checks of a body format's recycling (llm/recycled.h), for its tests.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "llm/types.h"

namespace mates::llm {

// A body format: made from a request, given back after.
struct BodyFormat {
  Json (*make)(const Request&);
  void (*recycle)(const Request&, Json);
};

// The body of `r` as a thread that has recycled nothing makes it.
inline std::string FreshBody(const BodyFormat& f, const Request& r) {
  std::string out;
  std::thread([&] { out = DumpJson(f.make(r)); }).join();
  return out;
}

// The body of `r` made on this thread (after whatever it recycled) is the
// fresh one.
inline void ExpectFresh(const BodyFormat& f, const Request& r, const std::string& what = "") {
  EXPECT_EQ(DumpJson(f.make(r)), FreshBody(f, r)) << what;
}

// What the conversation of `a` may be at a later call, each a case that
// recycling must tell from `a`. `a` has a user turn, an assistant turn
// whose second block is a tool call, and a user turn that begins with its
// result.
struct NextCalls {
  Request longer;   // a turn more
  Request edited;   // longer, an old result elided (microcompaction)
  Request flagged;  // one field of one block differs
  Request input;    // a tool call's input differs
  Request shorter;  // compacted
  Request big;      // longer, past what is kept: made whole each time
};
inline NextCalls NextCallsOf(const Request& a) {
  NextCalls n{a, a, a, a, a, a};
  n.longer.messages.push_back({Role::kAssistant, {ContentBlock::Text("Built.")}});
  n.longer.messages.push_back({Role::kUser, {ContentBlock::Text("Task #2: test it")}});
  n.edited = n.longer;
  n.edited.messages[2].content[0].text = "[elided]";
  n.flagged.messages[2].content[0].is_error = true;
  n.input.messages[1].content[1].input_json = R"({"command":"make test"})";
  n.shorter.messages.resize(1);
  n.big = n.longer;
  n.big.messages[0].content[0].text += std::string(300 << 10, 'x');
  return n;
}

// Every order of two: the first's body made and recycled, then the
// second's made, which must be what a fresh one is.
inline void ExpectEveryPairWhole(const BodyFormat& f, const std::vector<const Request*>& all) {
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < all.size(); ++j) {
      f.recycle(*all[i], f.make(*all[i]));
      ExpectFresh(f, *all[j], "body " + std::to_string(j) + " after body " + std::to_string(i));
    }
  }
}

// Only the body made last, given back with its own request, is taken
// back: `a`'s body made before `b`'s, or given back as `b`'s, is not.
inline void ExpectOnlyTheLastBodyTakenBack(const BodyFormat& f, const Request& a,
                                           const Request& b) {
  Json first = f.make(a);
  Json second = f.make(b);
  f.recycle(a, std::move(first));
  ExpectFresh(f, b, "after a body made before the last");
  Json made = f.make(a);
  f.recycle(b, std::move(made));
  ExpectFresh(f, b, "after a body given back as another's");
}

}  // namespace mates::llm
