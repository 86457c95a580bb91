#include "parse/traceback_lines.h"

#include <cctype>

namespace fingerprintd::parse {
namespace {

constexpr std::string_view kTracebackHeader = "Traceback (most recent call last):";
constexpr std::string_view kFrameStart = "File \"";
constexpr std::string_view kTerminatePrefix = "terminate called after throwing an instance of ";
// The last name of an exception class ends in one of these.
constexpr std::string_view kExceptionClassSuffixes[] = {"Error", "Exception", "Warning",
                                                        "Interrupt", "Exit"};

bool IsIdentStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }

bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Scans a dotted identifier at s[*i]; returns false if none.
bool ScanDotted(std::string_view s, size_t* i) {
  size_t j = *i;
  while (true) {
    if (j >= s.size() || !IsIdentStart(s[j])) return false;
    while (j < s.size() && IsIdentChar(s[j])) ++j;
    if (j + 1 < s.size() && s[j] == '.' && IsIdentStart(s[j + 1])) {
      ++j;
      continue;
    }
    break;
  }
  *i = j;
  return true;
}

bool LooksLikeExceptionClass(std::string_view type) {
  std::string_view base = type.substr(0, type.find('('));
  const size_t dot = base.rfind('.');
  std::string_view last = dot == std::string_view::npos ? base : base.substr(dot + 1);
  if (last == "Error") return false;  // "Error: could not ..." is prose, not a class
  for (std::string_view suffix : kExceptionClassSuffixes) {
    if (EndsWith(last, suffix)) return true;
  }
  // "tvm.error.InternalError"-style paths are covered above; a dotted path
  // with an "...Error" component (e.g. "torch.cuda.OutOfMemoryError") too.
  return dot != std::string_view::npos && base.find("Error") != std::string_view::npos;
}

std::string Lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const std::vector<std::string>& TracebackTriggers() {
  static const std::vector<std::string> kTriggers = [] {
    // The header without its colon: a header glued to more text is one too.
    std::vector<std::string> out = {
        Lowercase(kTracebackHeader.substr(0, kTracebackHeader.size() - 1)), Lowercase(kFrameStart)};
    for (std::string_view suffix : kExceptionClassSuffixes) out.push_back(Lowercase(suffix));
    // A C++ failure record opens with the terminate handler's line.
    out.push_back(Lowercase(kTerminatePrefix.substr(0, 24)));
    return out;
  }();
  return kTriggers;
}

std::string_view TrimSpaces(std::string_view s) {
  size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  size_t e = s.size();
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

bool IsTracebackHeaderLine(std::string_view message) {
  // Cheap rejection first: the header ends in "):" and is mostly at column 0.
  if (message.size() < kTracebackHeader.size() || message.back() != ':') return false;
  return EndsWith(TrimSpaces(message), kTracebackHeader);
}

bool IsChainSeparatorLine(std::string_view message) {
  if (message.size() < 60) return false;
  std::string_view t = TrimSpaces(message);
  return t == "The above exception was the direct cause of the following exception:" ||
         t == "During handling of the above exception, another exception occurred:";
}

bool ParseFrameLine(std::string_view message, FrameLine* out) {
  size_t i = 0;
  while (i < message.size() && message[i] == ' ') ++i;
  if (message.substr(i, kFrameStart.size()) != kFrameStart) return false;
  i += kFrameStart.size();
  const size_t close = message.find("\", line ", i);
  if (close == std::string_view::npos) return false;
  FrameLine f;
  f.file = message.substr(i, close - i);
  size_t j = close + 8;
  const size_t digits_start = j;
  int64_t n = 0;
  while (j < message.size() && message[j] >= '0' && message[j] <= '9' && n < 1'000'000'000) {
    n = n * 10 + (message[j] - '0');
    ++j;
  }
  if (j == digits_start) return false;
  f.line = static_cast<int32_t>(n);
  if (message.substr(j, 5) == ", in ") {
    f.function = TrimSpaces(message.substr(j + 5));
  } else if (j != message.size() && TrimSpaces(message.substr(j)).size() != 0) {
    return false;
  }
  *out = f;
  return true;
}

bool IsTracebackMarkerLine(std::string_view t) {
  if (t.empty()) return false;
  if (t[0] == '^' || t[0] == '~') {
    for (char c : t) {
      if (c != '^' && c != '~' && c != ' ') return false;
    }
    return true;
  }
  if (t.substr(0, 4) == "...<" && EndsWith(t, "lines>...")) return true;
  return t.substr(0, 21) == "[Previous line repeat";
}

bool ParseExceptionLine(std::string_view message, bool strict, ExceptionLine* out) {
  if (message.empty() || !IsIdentStart(message[0])) return false;
  size_t i = 0;
  if (!ScanDotted(message, &i)) return false;
  if (i < message.size() && message[i] == '(') {  // RayTaskError(RuntimeError)
    size_t j = i + 1;
    if (!ScanDotted(message, &j) || j >= message.size() || message[j] != ')') return false;
    i = j + 1;
  }
  ExceptionLine e;
  e.type = message.substr(0, i);
  if (i < message.size()) {
    if (message[i] != ':') return false;
    if (i + 1 < message.size()) {
      if (message[i + 1] != ' ') return false;
      e.message = message.substr(i + 2);
    }
  } else if (strict && e.type.find('.') == std::string_view::npos &&
             !LooksLikeExceptionClass(e.type)) {
    return false;
  }
  if (strict && !LooksLikeExceptionClass(e.type)) return false;
  // A bare label a person or a launcher wrote in front of the real exception
  // line ("Error: tvm.error.InternalError: ...") reads as that exception.
  if ((e.type == "Error" || e.type == "Exception") && !e.message.empty()) {
    ExceptionLine inner;
    if (ParseExceptionLine(e.message, /*strict=*/true, &inner) && !inner.message.empty()) {
      e = inner;
    }
  }
  *out = e;
  return true;
}

bool ParseCppTerminateLine(std::string_view message, std::string_view* type) {
  const std::string_view t = TrimSpaces(message);
  if (t.size() <= kTerminatePrefix.size() + 2 ||
      t.substr(0, kTerminatePrefix.size()) != kTerminatePrefix) {
    return false;
  }
  std::string_view rest = t.substr(kTerminatePrefix.size());
  if (rest.front() == '\'' && rest.back() == '\'') rest = rest.substr(1, rest.size() - 2);
  if (rest.empty()) return false;
  *type = rest;
  return true;
}

bool ParseCppWhatLine(std::string_view message, std::string_view* what) {
  const std::string_view t = TrimSpaces(message);
  if (t.substr(0, 7) != "what():") return false;
  *what = TrimSpaces(t.substr(7));
  return true;
}

bool ParseCppRaisedFromLine(std::string_view message, FrameLine* out) {
  constexpr std::string_view kStart = "Exception raised from ";
  const std::string_view t = TrimSpaces(message);
  if (t.substr(0, kStart.size()) != kStart) return false;
  std::string_view rest = t.substr(kStart.size());
  const size_t at = rest.find(" at ");
  if (at == std::string_view::npos) return false;
  FrameLine f;
  f.function = rest.substr(0, at);
  std::string_view place = rest.substr(at + 4);
  const size_t paren = place.find(" (");
  if (paren != std::string_view::npos) place = place.substr(0, paren);
  const size_t colon = place.rfind(':');
  f.file = colon == std::string_view::npos ? place : place.substr(0, colon);
  if (colon != std::string_view::npos) {
    int64_t n = 0;
    for (char c : place.substr(colon + 1)) {
      if (c < '0' || c > '9' || n > 100'000'000) break;
      n = n * 10 + (c - '0');
    }
    f.line = static_cast<int32_t>(n);
  }
  *out = f;
  return true;
}

namespace {

// "SYMBOL + 0x57" -> "SYMBOL"; "" -> "<unknown function>".
std::string_view WithoutOffset(std::string_view symbol) {
  symbol = TrimSpaces(symbol);
  const size_t plus = symbol.rfind(" + ");
  if (plus != std::string_view::npos) symbol = TrimSpaces(symbol.substr(0, plus));
  return symbol.empty() ? std::string_view("<unknown function>") : symbol;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

bool ParseCppFrameLine(std::string_view message, FrameLine* out) {
  const std::string_view t = TrimSpaces(message);
  if (t.substr(0, 7) == "frame #") {
    const size_t colon = t.find(": ", 7);
    if (colon == std::string_view::npos || !AllDigits(t.substr(7, colon - 7))) return false;
    std::string_view body = t.substr(colon + 2);
    FrameLine f;
    // "(0x7f00 in /path/libc10.so)" at the end names the library.
    const size_t open = body.rfind(" (0x");
    if (open != std::string_view::npos && body.back() == ')') {
      const std::string_view where = body.substr(open + 2, body.size() - open - 3);
      const size_t in = where.find(" in ");
      if (in != std::string_view::npos) f.file = where.substr(in + 4);
      body = body.substr(0, open);
    }
    f.function = WithoutOffset(body);
    *out = f;
    return true;
  }
  // TensorRT-LLM: "1       0x7009a217b67c tensorrt_llm::common::throwRuntimeError(...) + 95"
  size_t i = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
  if (i == 0 || i == t.size() || (t[i] != ' ' && t[i] != '\t')) return false;
  std::string_view rest = TrimSpaces(t.substr(i));
  if (rest.substr(0, 2) != "0x") return false;
  size_t j = 2;
  while (j < rest.size() && std::isxdigit(static_cast<unsigned char>(rest[j]))) ++j;
  if (j == 2 || j == rest.size() || rest[j] != ' ') return false;
  FrameLine f;
  std::string_view symbol = rest.substr(j + 1);
  // "/path/libnvinfer.so.10(+0x17eb620) [0x700ce283f620]": a library, no symbol.
  const size_t lib_offset = symbol.find("(+0x");
  if (lib_offset != std::string_view::npos) {
    f.file = symbol.substr(0, lib_offset);
    symbol = {};
  }
  f.function = WithoutOffset(symbol);
  *out = f;
  return true;
}

bool IsRayWrapperException(const ExceptionLine& line) {
  const bool wrapper = line.type.find("RayTaskError") != std::string_view::npos ||
                       line.type.find("RayActorError") != std::string_view::npos;
  return wrapper && line.message.find("ray::") != std::string_view::npos;
}

}  // namespace fingerprintd::parse
