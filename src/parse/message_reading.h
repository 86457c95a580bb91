// Message reading: a log message as a person reads it, whatever a terminal, a
// paste or another notation did to its bytes. Rules are written against the
// text these functions give, not against the bytes of one paste.
//
//   wraps      a message continues on the next physical line when the piece
//              before looks cut off (LooksCutOff: a terminal's width reached,
//              a trailing `,` `:` `(`, a parenthesis or bracket left open) or
//              the next line cannot start a record of its own
//              (CannotStartRecord: `(/path/file.hpp:60):`, a lone
//              `path/file.hpp:17` location, closing punctuation). The
//              traceback assembler joins exception messages with these, and
//              the rule engine rejoins wrapped messages with them.
//   repr       Python's repr of a tuple of strings, the way an exception
//              built with several arguments prints
//              (`RuntimeError: ('not supported for ', 'the current GPU.')`),
//              reads as the strings' text joined (ReadReprStrings). A list
//              or a tuple quoted among other words is a value and keeps
//              its quotes.
//   escapes    a one-line JSON record (`{"msg": "Traceback ...\n  File ...`)
//              holding escaped newlines reads as the lines it holds
//              (SplitEscapedLines). Elsewhere an escaped newline stays part
//              of its message (a repr re-raised by another process).
//
// Paste wrappers (Markdown quotes, CI times, grep -n, ...) are removed
// earlier, by paste_wrappers.h.
//
// Threading: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fingerprintd::parse {

// A terminal's narrowest usual width: a piece this long may be a hard wrap.
inline constexpr size_t kNarrowestTerminal = 79;

// True if `piece` ends where a message cannot: at least kNarrowestTerminal
// bytes, a last byte of `,` `:` `(` `[`, or more `(` / `[` opened than closed.
bool LooksCutOff(std::string_view piece);

// True if `line` cannot be the first line of a record: it starts with closing
// punctuation (`)` `]` `}` `,` `;`), with `(` and a path (`(/`, `(.`, `(~`),
// or it is a source location alone (`/ws/csrc/x/helper.hpp:17`, optionally
// followed by `:` or `,`).
bool CannotStartRecord(std::string_view line);

// True if `next` continues the message whose last piece is `piece`.
inline bool ContinuesMessage(std::string_view piece, std::string_view next) {
  return LooksCutOff(piece) || CannotStartRecord(next);
}

// Appends `next` to `text`, whose last piece was `last_piece_size` bytes:
// a piece cut at the terminal's width between two letters or digits (the
// middle of a word) is glued without a space; any other cut is read with one
// space.
void AppendWrapped(std::string* text, size_t last_piece_size, std::string_view next);

// If `message` is an exception's args tuple of at least two string literals
// (`Type: ('a', "b")`, `Wrapper(Type): ('a', 'b')` or the tuple alone, the
// tuple ending the message), writes the message with the tuple replaced by
// the literals' text joined, escapes decoded, and returns true. Returns false
// (and leaves *out alone) otherwise: a list (`['a', 'b']`) or a tuple among
// other words (`Valid backends: ('A', 'B')`) is a value the message quotes.
bool ReadReprStrings(std::string_view message, std::string* out);

// If `message` is a JSON object (`{"...`) holding at least one escaped
// newline (a backslash and `n`), writes the lines it holds to *lines (escapes `\"`, `\\`, `\t`,
// `\'` decoded; a JSON object's opening `{"key": "` before the first line and its closing `"}`
// after the last removed; empty lines dropped) and returns true. Returns false (and leaves *lines
// alone) otherwise.
bool SplitEscapedLines(std::string_view message, std::vector<std::string>* lines);

// False if ReadReprStrings or SplitEscapedLines may read `message` as
// anything but itself: it starts with `{"`, or a quote follows `(` or `[`.
bool ReadsAsWritten(std::string_view message);

}  // namespace fingerprintd::parse
