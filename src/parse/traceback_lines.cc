#include "parse/traceback_lines.h"

#include <cctype>

namespace fingerprintd::parse {
namespace {

constexpr std::string_view kTracebackHeader = "Traceback (most recent call last):";
constexpr std::string_view kFrameStart = "File \"";
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

bool IsRayWrapperException(const ExceptionLine& line) {
  const bool wrapper = line.type.find("RayTaskError") != std::string_view::npos ||
                       line.type.find("RayActorError") != std::string_view::npos;
  return wrapper && line.message.find("ray::") != std::string_view::npos;
}

}  // namespace fingerprintd::parse
