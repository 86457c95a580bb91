// Line cleaning: removes ANSI escape sequences and the trailing '\r', checks
// UTF-8, and notes binary bytes, in one pass over the line.
//
// vLLM colours its process prefixes even without a TTY and Ray colours its
// relayed actor names, so most prefixed lines carry ESC sequences; rules must
// never see them. Lines without any byte < 0x20 or >= 0x80 (the common case)
// are returned as a view of the input without copying.
//
// Invalid UTF-8 is replaced by U+FFFD per offending byte so that every later
// stage (RE2 in UTF-8 mode, JSON output of evidence) sees valid text; the raw
// line keeps the original bytes. NUL and other C0 control bytes are kept.
//
// Threading: pure functions; the caller owns the scratch buffer.
#pragma once

#include <string>
#include <string_view>

namespace fingerprintd::parse {

struct CleanFlags {
  bool binary = false;        // NUL or a C0 control byte other than \t \r ESC
  bool invalid_utf8 = false;  // at least one byte was replaced
};

// Returns `raw` without ANSI sequences and without one trailing '\r'. The
// result views `raw` or `*scratch` (valid until the scratch is next written).
std::string_view CleanLine(std::string_view raw, std::string* scratch, CleanFlags* flags);

// Length of the ESC sequence starting at text[0] (text[0] == '\x1b'), >= 1.
size_t EscapeSequenceLength(std::string_view text);

// True if every byte is printable ASCII (0x20..0x7e): CleanLine leaves such a
// text as it is, and no escape sequence, '\r', tab or UTF-8 sequence is in it.
bool IsPlainAscii(std::string_view text);

// The length of the start of `raw` that CleanLine turns into `clean_prefix`
// (escape sequences dropped, printable bytes kept), such that it does so
// whatever printable ASCII follows: every escape sequence in it, measured on
// it alone, ends before its last byte, and it raises no CleanFlags.
// std::string_view::npos when `raw` has no such start.
size_t RawLengthOf(std::string_view raw, std::string_view clean_prefix);

}  // namespace fingerprintd::parse
