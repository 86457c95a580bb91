#include "parse/header.h"

#include <algorithm>

namespace fingerprintd::parse {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsIdentChar(char c) { return IsUpper(c) || (c >= 'a' && c <= 'z') || IsDigit(c) || c == '_'; }
bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The five Python level names (plus Ray's SUCC and uvicorn's TRACE); single
// letters are only accepted where a format uses them.
Level WordLevel(std::string_view word) {
  if (word.size() < 4) return Level::kUnknown;
  return ParseLevel(word);
}

// Reads an uppercase word at text[pos]; returns its end.
size_t UpperWordEnd(std::string_view text, size_t pos) {
  while (pos < text.size() && IsUpper(text[pos])) ++pos;
  return pos;
}

void SetMessage(std::string_view line, size_t header_end, size_t message_start, Header* out) {
  out->text = line.substr(0, header_end);
  out->message = message_start <= line.size() ? line.substr(message_start) : std::string_view();
}

// `file.py:N]` at text[pos] (vLLM location); returns the index after ']' or 0.
size_t ParseBracketLocation(std::string_view text, size_t pos, std::string_view* location) {
  size_t close;
  if (pos < text.size() && text[pos] == '<') {  // "<frozen importlib._bootstrap>:1360]"
    const size_t gt = text.find('>', pos);
    if (gt == std::string_view::npos || gt > pos + 200) return 0;
    close = text.find(']', gt);
  } else {
    const size_t limit = std::min(text.size(), pos + 300);
    const char* p = text.data();
    close = pos;
    while (close < limit && p[close] != ']' && p[close] != ' ') ++close;
  }
  if (close == std::string_view::npos || close >= text.size() || text[close] != ']') return 0;
  const size_t colon = text.rfind(':', close);
  if (colon == std::string_view::npos || colon <= pos || colon + 1 == close) return 0;
  for (size_t i = colon + 1; i < close; ++i) {
    if (!IsDigit(text[i])) return 0;
  }
  *location = text.substr(pos, close - pos);
  return close + 1;
}

// `text_generation_router::server: ` at `pos`: a Rust module path with at
// least one `::`, then `: `. Returns where the message starts, or 0.
size_t RustTargetEnd(std::string_view line, size_t pos) {
  size_t i = pos;
  bool path = false;
  while (i < line.size()) {
    const size_t start = i;
    while (i < line.size() &&
           ((line[i] >= 'a' && line[i] <= 'z') || IsDigit(line[i]) || line[i] == '_')) {
      ++i;
    }
    if (i == start) return 0;
    if (line.substr(i, 2) == "::") {
      path = true;
      i += 2;
      continue;
    }
    break;
  }
  if (!path || line.substr(i, 2) != ": ") return 0;
  return i + 2;
}

// vLLM `LEVEL MM-DD HH:MM:SS [file:N] msg`, uvicorn `LEVEL:   msg`, or Python
// logging's padded `LEVEL    msg` (a level and no time).
bool ParseLevelFirst(std::string_view line, Header* out) {
  const size_t word_end = UpperWordEnd(line, 0);
  if (word_end >= line.size() || word_end > 8) return false;
  const Level level = WordLevel(line.substr(0, word_end));
  if (level == Level::kUnknown) return false;
  if (line[word_end] == ':') {
    size_t pos = word_end + 1;
    if (pos >= line.size() || line[pos] != ' ') return false;
    while (pos < line.size() && line[pos] == ' ') ++pos;
    out->kind = HeaderKind::kUvicorn;
    out->level = level;
    out->fixed_size = word_end + 2;  // `LEVEL: `; more spaces only move the message
    SetMessage(line, word_end + 1, pos, out);
    return true;
  }
  if (line[word_end] != ' ') return false;
  size_t pos = word_end + 1;
  CivilTime t;
  size_t len = ParseMonthDayTime(line.substr(pos), &t);
  // NVIDIA NIM: the same shape with the year, `ERROR 2025-07-21 14:34:24.934 x.py:62] msg`.
  if (len == 0) len = ParseIsoDateTime(line.substr(pos), &t);
  if (len == 0) {
    // Rust's tracing (TGI, Dynamo, NIM's router): `LEVEL target::path: msg`,
    // the time before it taken by the envelope; a level and no time of its own.
    if (const size_t target_end = RustTargetEnd(line, pos); target_end != 0) {
      out->kind = HeaderKind::kPaddedLevel;
      out->level = level;
      SetMessage(line, word_end, target_end, out);
      return true;
    }
    // Python logging's `%(levelname)-8s %(message)s` (rich-less servers, launchers):
    // the level padded with at least two spaces so that the message starts at column 9.
    constexpr size_t kPaddedMessageColumn = 9;
    size_t message = word_end;
    while (message < line.size() && line[message] == ' ') ++message;
    if (message != kPaddedMessageColumn || message - word_end < 2 || message >= line.size()) {
      return false;
    }
    out->kind = HeaderKind::kPaddedLevel;
    out->level = level;
    SetMessage(line, word_end, message, out);
    return true;
  }
  pos += len;
  pos += ParseFraction(line, pos, &t.micros);  // vllm-ascend appends .mmm
  out->kind = HeaderKind::kVllm;
  out->level = level;
  out->has_time = true;
  out->time = t;
  if (pos >= line.size()) {
    SetMessage(line, pos, pos, out);
    return true;
  }
  if (line[pos] != ' ') return false;
  // Level, time and the space after them; what follows (a location or not)
  // only places the message.
  out->fixed_size = pos + 1;
  out->time_begin = word_end + 1;
  out->time_end = pos;
  size_t loc_start = pos + 1;
  if (loc_start < line.size() && line[loc_start] == '[') ++loc_start;
  const size_t after = ParseBracketLocation(line, loc_start, &out->location);
  if (after == 0) {
    SetMessage(line, pos, pos + 1, out);
    return true;
  }
  // Exactly one space separates the header; more are part of the message
  // (traceback frames and code keep their indentation).
  SetMessage(line, after, after < line.size() && line[after] == ' ' ? after + 1 : after, out);
  return true;
}

// `HH:MM:SS[.fraction]` at `pos` into *t (whose date is already set);
// returns the position after it, or 0 if it is not a plausible time.
size_t ParseClock(std::string_view line, size_t pos, CivilTime* t) {
  if (pos + 8 > line.size() || line[pos + 2] != ':' || line[pos + 5] != ':' ||
      !ReadDigits(line, pos, 2, &t->hour) || !ReadDigits(line, pos + 3, 2, &t->minute) ||
      !ReadDigits(line, pos + 6, 2, &t->second) || !PlausibleCivil(*t)) {
    return 0;
  }
  pos += 8;
  return pos + ParseFraction(line, pos, &t->micros);
}

// The common tail of the C++ headers (glog, torch c10): at `pos` a space, then
// `file.cpp:N] msg`.
bool FinishCppHeader(std::string_view line, size_t pos, const CivilTime& t, HeaderKind kind,
                     Level level, Header* out) {
  if (pos >= line.size() || line[pos] != ' ') return false;
  const size_t after = ParseBracketLocation(line, pos + 1, &out->location);
  if (after == 0) return false;
  out->kind = kind;
  out->level = level;
  out->has_time = true;
  out->time = t;
  SetMessage(line, after, after < line.size() && line[after] == ' ' ? after + 1 : after, out);
  return true;
}

// glog `I20250312 15:30:37.177192 3083291 file.cpp:41] msg` or `I0312 ...`.
bool ParseGlog(std::string_view line, Header* out) {
  size_t pos = 1;
  while (pos < line.size() && IsDigit(line[pos])) ++pos;
  const size_t digits = pos - 1;
  if ((digits != 4 && digits != 8) || pos >= line.size() || line[pos] != ' ') return false;
  CivilTime t;
  size_t d = 1;
  if (digits == 8) {
    ReadDigits(line, 1, 4, &t.year);
    d = 5;
  }
  ReadDigits(line, d, 2, &t.month);
  ReadDigits(line, d + 2, 2, &t.day);
  pos = ParseClock(line, pos + 1, &t);
  if (pos == 0) return false;
  while (pos < line.size() && line[pos] == ' ') ++pos;
  while (pos < line.size() && IsDigit(line[pos])) ++pos;  // thread id
  return FinishCppHeader(line, pos, t, HeaderKind::kGlog, ParseLevel(line.substr(0, 1)), out);
}

// torch c10 `[W730 15:32:17.841273251 ProcessGroupNCCL.cpp:1479] msg`.
bool ParseTorchC10(std::string_view line, Header* out) {
  const char sev = line[1];
  if (sev != 'I' && sev != 'W' && sev != 'E' && sev != 'F') return false;
  size_t pos = 2;
  while (pos < line.size() && IsDigit(line[pos])) ++pos;
  const size_t digits = pos - 2;
  if ((digits != 3 && digits != 4) || pos >= line.size() || line[pos] != ' ') return false;
  CivilTime t;
  ReadDigits(line, 2, digits - 2, &t.month);
  ReadDigits(line, pos - 2, 2, &t.day);
  pos = ParseClock(line, pos + 1, &t);
  if (pos == 0) return false;
  return FinishCppHeader(line, pos, t, HeaderKind::kTorch, ParseLevel(line.substr(1, 1)), out);
}

// SGLang message may start with `LEVEL file.py:N: ` (newer components).
void TakeSglangInnerLevel(Header* out) {
  std::string_view msg = out->message;
  const size_t word_end = UpperWordEnd(msg, 0);
  if (word_end == 0 || word_end >= msg.size() || msg[word_end] != ' ') return;
  const Level level = WordLevel(msg.substr(0, word_end));
  if (level == Level::kUnknown) return;
  const size_t colon_space = msg.find(": ", word_end + 1);
  if (colon_space == std::string_view::npos || colon_space > word_end + 200) return;
  std::string_view loc = msg.substr(word_end + 1, colon_space - word_end - 1);
  const size_t colon = loc.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == loc.size() ||
      loc.find(' ') != std::string_view::npos) {
    return;
  }
  for (size_t i = colon + 1; i < loc.size(); ++i) {
    if (!IsDigit(loc[i])) return;
  }
  out->level = level;
  out->location = loc;
  out->message = msg.substr(colon_space + 2);
}

// SGLang `[YYYY-MM-DD HH:MM:SS[.mmm][ DPd][ PPp][ TPt][ EPe]] msg`.
bool ParseSglang(std::string_view line, Header* out) {
  CivilTime t;
  if (ParseIsoDateTime(line.substr(1), &t) == 0) return false;
  size_t pos = 20;
  pos += ParseFraction(line, pos, &t.micros);
  const size_t time_end = pos;
  const size_t close = line.find(']', pos);
  if (close == std::string_view::npos || close > pos + 80) return false;
  std::string_view tags = line.substr(pos, close - pos);
  if (!tags.empty()) {
    if (tags[0] != ' ') return false;
    tags.remove_prefix(1);
    for (char c : tags) {
      if (!IsUpper(c) && !IsDigit(c) && c != '_' && c != ' ') return false;
    }
    ProcessId id;
    if (ParseParallelParts(tags, &id)) {
      id.role = ProcessRole::kWorker;
      id.name = tags;
      out->has_worker = true;
      out->worker = id;
    }
  }
  out->kind = HeaderKind::kSglang;
  out->has_time = true;
  out->time = t;
  const size_t after = close + 1;
  const size_t message_start = after < line.size() && line[after] == ' ' ? after + 1 : after;
  SetMessage(line, after, message_start, out);
  TakeSglangInnerLevel(out);
  // The inner level is decided by the message's uppercase first word and
  // the byte after it, when that byte is no space or the word no level; a
  // line starting with the same bytes gets the same kind, time, rank tags
  // and (no) level then.
  if (out->location.empty() && message_start == after + 1) {
    const std::string_view msg = out->message;
    const size_t word_end = UpperWordEnd(msg, 0);
    if (word_end < msg.size() &&
        (msg[word_end] != ' ' || WordLevel(msg.substr(0, word_end)) == Level::kUnknown)) {
      out->fixed_size = message_start + word_end + 1;
      out->time_begin = 1;
      out->time_end = time_end;
    }
  }
  return true;
}

// TRT-LLM `[MM/DD/YYYY-HH:MM:SS] [TRT-LLM] [RANK n] [I] msg`.
bool ParseTrtLlm(std::string_view line, Header* out) {
  if (line.size() < 21 || line[3] != '/' || line[6] != '/' || line[11] != '-' || line[14] != ':' ||
      line[17] != ':' || line[20] != ']') {
    return false;
  }
  CivilTime t;
  if (!ReadDigits(line, 1, 2, &t.month) || !ReadDigits(line, 4, 2, &t.day) ||
      !ReadDigits(line, 7, 4, &t.year) || !ReadDigits(line, 12, 2, &t.hour) ||
      !ReadDigits(line, 15, 2, &t.minute) || !ReadDigits(line, 18, 2, &t.second) ||
      !PlausibleCivil(t)) {
    return false;
  }
  out->kind = HeaderKind::kTrtLlm;
  out->has_time = true;
  out->time = t;
  size_t pos = 21;
  if (line.substr(pos, 10) == " [TRT-LLM]") {
    pos += 10;
    std::string_view rest = line.substr(pos);
    for (std::string_view tag : {std::string_view(" [RANK "), std::string_view(" [MPI_Rank ")}) {
      if (!StartsWith(rest, tag)) continue;
      size_t i = tag.size();
      int32_t rank = 0;
      size_t digits_end = i;
      while (digits_end < rest.size() && IsDigit(rest[digits_end])) ++digits_end;
      // At most 9 digits: an int32 rank (longer overflowed; found by tests/fuzz).
      if (digits_end == i || digits_end - i > 9 || digits_end >= rest.size() ||
          rest[digits_end] != ']') {
        break;
      }
      ReadDigits(rest, i, digits_end - i, &rank);
      out->has_worker = true;
      out->worker.role = ProcessRole::kWorker;
      out->worker.name = rest.substr(2, digits_end - 2);  // "RANK 0"
      out->worker.rank = rank;
      pos += digits_end + 1;
      break;
    }
    if (pos + 4 <= line.size() && line[pos] == ' ' && line[pos + 1] == '[' &&
        line[pos + 3] == ']') {
      out->level = ParseLevel(line.substr(pos + 2, 1));
      pos += 4;
      // Time, tags and level are decided: what follows only places the message.
      if (pos < line.size() && line[pos] == ' ') {
        out->fixed_size = pos + 1;
        out->time_begin = 1;
        out->time_end = 20;
      }
    }
  }
  SetMessage(line, pos, pos < line.size() && line[pos] == ' ' ? pos + 1 : pos, out);
  return true;
}

// `[TensorRT-LLM][INFO] msg` (C++ runtime).
bool ParseTrtCpp(std::string_view line, Header* out) {
  constexpr std::string_view kTag = "[TensorRT-LLM]";
  if (!StartsWith(line, kTag)) return false;
  size_t pos = kTag.size();
  out->kind = HeaderKind::kTrtCpp;
  if (pos < line.size() && line[pos] == '[') {
    const size_t close = line.find(']', pos);
    if (close != std::string_view::npos && close < pos + 12) {
      out->level = WordLevel(line.substr(pos + 1, close - pos - 1));
      pos = close + 1;
    }
  }
  SetMessage(line, pos, pos < line.size() && line[pos] == ' ' ? pos + 1 : pos, out);
  return true;
}

// `YYYY-MM-DD HH:MM:SS,mmm` then Python logging, Ray, or anything.
bool ParseIsoFirst(std::string_view line, Header* out) {
  CivilTime t;
  if (ParseIsoDateTime(line, &t) == 0) return false;
  size_t pos = 19;
  pos += ParseFraction(line, pos, &t.micros);
  // RFC 3339's zone (Rust's tracing, Dynamo, TGI: "2025-04-14T15:52:02.679Z
  // ERROR target: msg") is passed over, so that the level after it is read.
  if (pos < line.size() && line[pos] == 'Z') {
    ++pos;
  } else if (pos + 6 <= line.size() && (line[pos] == '+' || line[pos] == '-') &&
             line[pos + 3] == ':' && IsDigit(line[pos + 1]) && IsDigit(line[pos + 4])) {
    pos += 6;
  }
  out->has_time = true;
  out->time = t;
  std::string_view rest = line.substr(pos);
  if (StartsWith(rest, " - ")) {  // logging default: " - name - LEVEL - msg"
    const size_t name_end = rest.find(" - ", 3);
    if (name_end != std::string_view::npos) {
      const size_t level_start = name_end + 3;
      const size_t level_end = UpperWordEnd(rest, level_start);
      const Level level = WordLevel(rest.substr(level_start, level_end - level_start));
      if (level != Level::kUnknown && rest.substr(level_end, 3) == " - ") {
        out->kind = HeaderKind::kPythonLogging;
        out->level = level;
        SetMessage(line, pos + level_end, pos + level_end + 3, out);
        return true;
      }
    }
  }
  if (StartsWith(rest, "\t")) {  // Ray: "\tLEVEL file.py:N -- msg"
    const size_t level_end = UpperWordEnd(rest, 1);
    const Level level = WordLevel(rest.substr(1, level_end - 1));
    const size_t dashes = rest.find(" -- ", level_end);
    if (level != Level::kUnknown && level_end < rest.size() && rest[level_end] == ' ' &&
        dashes != std::string_view::npos) {
      out->kind = HeaderKind::kRay;
      out->level = level;
      out->location = rest.substr(level_end + 1, dashes - level_end - 1);
      SetMessage(line, pos + dashes, pos + dashes + 4, out);
      return true;
    }
  }
  // Generic: time, then maybe "LEVEL " or "[component:LEVEL]".
  size_t msg = pos;
  while (msg < line.size() && (line[msg] == ' ' || line[msg] == '\t')) ++msg;
  out->kind = HeaderKind::kGenericTime;
  const size_t word_end = UpperWordEnd(line, msg);
  const Level level = WordLevel(line.substr(msg, word_end - msg));
  if (level != Level::kUnknown && word_end < line.size() && line[word_end] == ' ') {
    out->level = level;
    SetMessage(line, word_end, word_end + 1, out);
    return true;
  }
  if (msg < line.size() && line[msg] == '[') {
    const size_t close = line.find(']', msg);
    if (close != std::string_view::npos && close < msg + 100) {
      const size_t colon = line.rfind(':', close);
      if (colon != std::string_view::npos && colon > msg) {
        out->level = WordLevel(line.substr(colon + 1, close - colon - 1));
      }
    }
  }
  SetMessage(line, pos, msg, out);
  return true;
}

// `/path/x.py:279: UserWarning: msg` or NCCL `host:pid:tid [dev] NCCL INFO msg`.
bool ParseTokenFirst(std::string_view line, Header* out) {
  const size_t space = line.substr(0, 512).find(' ');
  if (space == std::string_view::npos || space < 4) return false;
  std::string_view token = line.substr(0, space);
  if (token.back() == ':') {
    // warnings.showwarning: "<file>:<line>: <Category>: <message>"
    const size_t colon = token.rfind(':', token.size() - 2);
    if (colon == std::string_view::npos || colon == 0 || colon + 2 >= token.size()) return false;
    for (size_t i = colon + 1; i + 1 < token.size(); ++i) {
      if (!IsDigit(token[i])) return false;
    }
    std::string_view rest = line.substr(space + 1);
    size_t e = 0;
    while (e < rest.size() && (IsIdentChar(rest[e]) || rest[e] == '.')) ++e;
    std::string_view category = rest.substr(0, e);
    if (e >= rest.size() || rest[e] != ':' || category.size() < 7 ||
        category.substr(category.size() - 7) != "Warning") {
      return false;
    }
    out->kind = HeaderKind::kPythonWarning;
    out->level = Level::kWarning;
    out->location = token.substr(0, token.size() - 1);
    SetMessage(line, space, space + 1, out);
    return true;
  }
  // NCCL: two colons in the token, digits after each.
  const size_t c1 = token.find(':');
  const size_t c2 = c1 == std::string_view::npos ? c1 : token.find(':', c1 + 1);
  if (c2 == std::string_view::npos || c1 == 0) return false;
  for (size_t i = c1 + 1; i < token.size(); ++i) {
    if (!IsDigit(token[i]) && i != c2) return false;
  }
  std::string_view rest = line.substr(space + 1);
  if (rest.empty() || rest[0] != '[') return false;
  const size_t close = rest.find(']');
  if (close == std::string_view::npos || close > 8 || rest.substr(close, 7) != "] NCCL ")
    return false;
  std::string_view tail = rest.substr(close + 7);
  Level level;
  size_t skip;
  if (StartsWith(tail, "INFO ")) {
    level = Level::kInfo, skip = 5;
  } else if (StartsWith(tail, "WARN ")) {
    level = Level::kWarning, skip = 5;
  } else if (StartsWith(tail, "ERROR ")) {
    level = Level::kError, skip = 6;
  } else {
    return false;
  }
  out->kind = HeaderKind::kNccl;
  out->level = level;
  const size_t msg = space + 1 + close + 7 + skip;
  SetMessage(line, msg - 1, msg, out);
  return true;
}

// libstdc++'s last words for an uncaught C++ exception, `  what():  msg`
// (after `terminate called after throwing an instance of '...'`): the process
// aborts, so the line is CRITICAL whatever it says. A TensorRT-LLM
// `[TensorRT-LLM][ERROR] ` inside it is part of the header too.
bool ParseCppTerminate(std::string_view line, Header* out) {
  size_t pos = 0;
  while (pos < line.size() && pos < 8 && line[pos] == ' ') ++pos;
  if (!StartsWith(line.substr(pos), "what():")) return false;
  pos += 7;
  while (pos < line.size() && line[pos] == ' ') ++pos;
  Header inner;
  if (pos < line.size() && line[pos] == '[' && ParseTrtCpp(line.substr(pos), &inner)) {
    pos = line.size() - inner.message.size();
  }
  out->kind = HeaderKind::kCppTerminate;
  out->level = Level::kCritical;
  SetMessage(line, pos, pos, out);
  return true;
}

}  // namespace

bool ParseHeader(std::string_view line, Header* out) {
  *out = Header{};
  out->message = line;
  if (line.size() < 4) return false;
  const char c = line[0];
  bool ok = false;
  if (c == '[') {
    if (IsDigit(line[1])) {
      ok = (line.size() > 20 && line[5] == '-' && ParseSglang(line, out)) || ParseTrtLlm(line, out);
    } else if (line[1] == 'T') {
      ok = ParseTrtCpp(line, out);
    } else {
      ok = ParseTorchC10(line, out);
    }
  } else if (IsDigit(c) && line.size() >= 19 && line[4] == '-') {
    ok = ParseIsoFirst(line, out);
  } else if (IsUpper(c)) {
    ok = ParseLevelFirst(line, out) || ((c == 'I' || c == 'W' || c == 'E' || c == 'F') &&
                                        IsDigit(line[1]) && ParseGlog(line, out));
    // LLVM's report_fatal_error (Triton's backend) aborts the process: the
    // line is CRITICAL, and its words stay the message.
    if (!ok && StartsWith(line, "LLVM ERROR: ")) {
      out->kind = HeaderKind::kFatalWords;
      out->level = Level::kCritical;
      SetMessage(line, 0, 0, out);
      ok = true;
    }
  }
  if (!ok && c == ' ' && line[1] == ' ') ok = ParseCppTerminate(line, out);
  // Rust's tracing pads the level to five columns: ` WARN target: msg`.
  if (!ok && c == ' ' && IsUpper(line[1])) ok = ParseLevelFirst(line.substr(1), out);
  if (!ok && c != '[' && c != ' ') {
    Header h;
    h.message = line;
    if (ParseTokenFirst(line, &h)) {
      *out = h;
      ok = true;
    }
  }
  if (!ok) {
    *out = Header{};
    out->message = line;
  }
  return ok;
}

int64_t GuessedHeaderTime(const ParserOptions& options, const CivilTime& t, int32_t offset,
                          TimeFallback* fallback_out) {
  // No year anywhere: the latest year that does not date the line after
  // `limit`, the last moment it can have been written (ParserOptions::mtime_us).
  // The widest zone offset is allowed on top, since the header's zone is
  // often unknown: a wrong hour beats a wrong year.
  constexpr int64_t kZoneSlackUs = kYearGuessZoneSlackUs;
  const int64_t now_us = options.wall_clock != nullptr ? options.wall_clock() : options.now_us;
  int64_t limit = 0;
  TimeFallback fallback = TimeFallback::kYearFromClock;
  if (options.mtime_us > 0) {
    limit = options.mtime_us + kZoneSlackUs;
    fallback = TimeFallback::kYearFromMtime;
  } else if (options.mtime_year > 0) {
    const CivilTime year_end{0, 12, 31, 23, 59, 59, 999'999};
    limit = CivilToUnixMicros(year_end, options.mtime_year, offset);
    if (now_us > 0 && now_us + kZoneSlackUs < limit) limit = now_us + kZoneSlackUs;
    fallback = TimeFallback::kYearFromMtime;
  } else if (now_us > 0) {
    limit = now_us + kZoneSlackUs;
  }
  *fallback_out = fallback;
  if (limit == 0) return CivilToUnixMicros(t, options.current_year, offset);
  return LatestNotAfter(t, limit, offset);
}

}  // namespace fingerprintd::parse
