// UTF-8 checks, and the one way a name that is not valid UTF-8 is written
// where only UTF-8 may go (JSON state, incidents, alerts, metrics labels).
//
// Log lines are cleaned by the parser (parse/ansi.h: each invalid byte becomes
// U+FFFD). Names are not lines: a file path, a pod name a shipper sent, a
// label value. They are identities, so they are escaped rather than replaced:
// each byte that is not part of a valid UTF-8 sequence becomes the four
// characters `\xHH` (upper-case hex), so the same bytes always give the same
// name, an operator can read which byte it was, and two names that differ in
// such a byte stay different.
//
//   EscapeInvalidUtf8("vllm-\xff-0") == "vllm-\\xFF-0"
//
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace fingerprintd {

// Length of the valid UTF-8 sequence at text[0] (a byte >= 0x80), 0 if invalid.
size_t Utf8SequenceLength(std::string_view text);

// True if the whole of `text` is valid UTF-8.
bool IsValidUtf8(std::string_view text);

// `text` with every byte outside a valid UTF-8 sequence written as `\xHH`;
// `text` itself when it is valid.
std::string EscapeInvalidUtf8(std::string_view text);

}  // namespace fingerprintd
