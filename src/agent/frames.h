// Frames a model reads cannot be forged by content (DESIGN §19).
//
// mates frames what it puts before a model: <teammate-message …>,
// <team-update>, <background-task …>, <conversation-summary …>. Whatever
// goes inside one — a message, a task's subject or description, a tool's
// output, a file — passes NeutraliseFrames first: every place where it
// would read as a tag of one of those names has its opening bracket turned
// into '[', so the only frames in a model's input are the ones mates
// wrote. "Would read as" is taken broadly, since a model reads meaning and
// not bytes: '<' and its look-alikes (＜ ﹤ ‹ ⟨ 〈 ᐸ « …) and encodings
// (&lt; &#60; &#x3c; \u003c %3C, doubly escaped too), a '/' or spaces
// after it, and a name in any case, with '-', '_', spaces or invisible
// characters anywhere, full-width or mathematical letters, accents, and
// Cyrillic or Greek letters that look Latin. Everything else is left as
// it was: `std::vector<int>` and `<div>` read as before.
#pragma once

#include <string>
#include <string_view>

namespace mates::agent {

std::string NeutraliseFrames(std::string_view text);

// A value for an attribute of a frame mates writes: neutralised, with '"',
// '<' and '&' escaped and newlines made spaces, so that it cannot end its
// attribute either.
std::string FrameAttribute(std::string_view value);

}  // namespace mates::agent
