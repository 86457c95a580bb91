// Recognisers for the line shapes of a CPython traceback (CPython
// traceback.py, 3.8-3.13):
//
//   Traceback (most recent call last):
//     File "<path>", line <N>, in <func>
//       <source line>
//       ^^^^^^^^^^ / ~~~~^^^^             (3.11+ carets)
//       ...<K lines>...                   (3.13 elided statement)
//     [Previous line repeated 996 more times]
//   <qualified.Type>[(Inner)]: <message>  (or a bare Type)
//
//   The above exception was the direct cause of the following exception:
//   During handling of the above exception, another exception occurred:
//
// and the C++ shapes a native failure prints (libstdc++'s terminate handler,
// c10's error origin and frame dump, TensorRT-LLM's numbered backtrace):
//
//   terminate called after throwing an instance of 'c10::DistBackendError'
//     what():  <message>
//   Exception raised from <function> at <file>:<line> (most recent call first):
//   frame #0: <symbol> + 0x57 (0x7f00 in /path/libc10.so)
//   1       0x7009a217b67c <symbol> + 95
//
// Threading: pure functions over the message text (after prefix and header).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprintd::parse {

// What an idle stream's traceback reading reacts to (lowercase, matched in
// any case): the traceback header, a frame's `File "`, and the endings of an
// exception class's name (a chain separator holds "exception" too). A line
// holding none of them is a plain message to it, and leaves it idle.
const std::vector<std::string>& TracebackTriggers();

// True for "Traceback (most recent call last):", also at the end of a message
// (SGLang: "Scheduler hit an exception: Traceback (most recent call last):").
bool IsTracebackHeaderLine(std::string_view message);

// True for the two chain separators.
bool IsChainSeparatorLine(std::string_view message);

struct FrameLine {
  std::string_view file;
  int32_t line = 0;
  std::string_view function;  // empty when the frame prints none
};
// Parses `  File "path", line N, in func` (indentation optional).
bool ParseFrameLine(std::string_view message, FrameLine* out);

// True for a caret line (only spaces, '^' and '~'), "...<N lines>..." or
// "[Previous line repeated N more times]": shapes that are never frame code.
bool IsTracebackMarkerLine(std::string_view trimmed);

struct ExceptionLine {
  std::string_view type;     // "ray.exceptions.RayTaskError(RuntimeError)"
  std::string_view message;  // text after ": " (may be empty)
};
// Parses `Type: message` / `Type:` / bare `Type`, Type a dotted Python
// identifier optionally followed by `(Inner)`. With `strict`, the type must
// also look like an exception class (last name ends in Error, Exception,
// Warning, Interrupt or Exit, or a dotted path with an ...Error part), so that
// a lone line such as "Note: ..." outside a traceback is not taken for one.
bool ParseExceptionLine(std::string_view message, bool strict, ExceptionLine* out);

// Ray re-raises a remote failure as RayTaskError(...)/RayActorError and then
// prints the remote traceback; true when `line` is such a wrapper.
bool IsRayWrapperException(const ExceptionLine& line);

// `terminate called after throwing an instance of 'T'`: sets *type to T.
bool ParseCppTerminateLine(std::string_view message, std::string_view* type);

// `  what():  text`: sets *what to the text.
bool ParseCppWhatLine(std::string_view message, std::string_view* what);

// `Exception raised from F at FILE:N (most recent call first):` (c10): the
// place the C++ exception was thrown, as a frame (function F, file FILE).
bool ParseCppRaisedFromLine(std::string_view message, FrameLine* out);

// A frame of a C++ backtrace: c10's `frame #N: SYMBOL + 0xOFF (0xADDR in
// LIB)` (file LIB) or TensorRT-LLM's `N  0xADDR SYMBOL + OFF` (file ""), the
// symbol without its offset; `<unknown function>` when it has none.
bool ParseCppFrameLine(std::string_view message, FrameLine* out);

// Returns `s` without leading and trailing spaces and tabs.
std::string_view TrimSpaces(std::string_view s);

}  // namespace fingerprintd::parse
