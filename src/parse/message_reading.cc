#include "parse/message_reading.h"

#include "common/cpu.h"
#ifdef FINGERPRINTD_AVX2_DISPATCH
#include <immintrin.h>
#endif

#include <algorithm>
#include <cctype>

namespace fingerprintd::parse {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (IsSpace(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// `path/file.ext:N` (one or more `:N`), optionally ending in `:` or `,`: a
// compiler-style source location with nothing else on the line.
bool IsLocationAlone(std::string_view s) {
  if (!s.empty() && (s.back() == ':' || s.back() == ',')) s.remove_suffix(1);
  const size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view path = s.substr(0, colon);
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == path.size() ||
      path.find('/') == std::string_view::npos) {
    return false;
  }
  for (char c : path) {
    if (IsSpace(c)) return false;
  }
  std::string_view rest = s.substr(colon);
  while (!rest.empty()) {
    if (rest[0] != ':' || rest.size() < 2 || !std::isdigit(static_cast<unsigned char>(rest[1]))) {
      return false;
    }
    rest.remove_prefix(1);
    while (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0])))
      rest.remove_prefix(1);
  }
  return true;
}

// Decodes one Python string literal starting at s[*pos] (a quote); on success
// appends its text to *out and moves *pos past it.
bool ReadLiteral(std::string_view s, size_t* pos, std::string* out) {
  const char quote = s[*pos];
  std::string text;
  for (size_t i = *pos + 1; i < s.size(); ++i) {
    const char c = s[i];
    if (c == quote) {
      out->append(text);
      *pos = i + 1;
      return true;
    }
    if (c != '\\') {
      text.push_back(c);
      continue;
    }
    if (++i == s.size()) return false;
    switch (s[i]) {
      case 'n':
      case 't':
      case 'r':
        text.push_back(' ');
        break;
      default:
        text.push_back(s[i]);  // \\ \' \" and anything else: the character itself
    }
  }
  return false;  // a literal left open: not a repr
}

void SkipSpaces(std::string_view s, size_t* pos) {
  while (*pos < s.size() && IsSpace(s[*pos])) ++*pos;
}

// A tuple or list of >= 2 string literals at s[open] ('(' or '['): its
// literals' text to *out, the position after its closing bracket to *end.
bool ReadStringTuple(std::string_view s, size_t open, std::string* out, size_t* end) {
  const char close = s[open] == '(' ? ')' : ']';
  size_t pos = open + 1;
  int literals = 0;
  std::string text;
  while (true) {
    SkipSpaces(s, &pos);
    if (pos >= s.size()) return false;
    if (s[pos] == close && literals >= 2) break;
    if (s[pos] != '\'' && s[pos] != '"') return false;
    if (!ReadLiteral(s, &pos, &text)) return false;
    ++literals;
    SkipSpaces(s, &pos);
    if (pos < s.size() && s[pos] == ',') {
      ++pos;
    } else if (pos < s.size() && s[pos] == close && literals >= 2) {
      break;
    } else {
      return false;
    }
  }
  *end = pos + 1;
  out->append(text);
  return true;
}

// Where an exception's args tuple opens in `message`: at its start (after
// spaces), or after an exception type and `: ` (`RuntimeError: (`,
// `ray.exceptions.RayTaskError(RuntimeError): (`), when a string literal
// follows the `(`; npos otherwise.
size_t ReprTupleStart(std::string_view message) {
  size_t pos = 0;
  SkipSpaces(message, &pos);
  if (pos < message.size() && message[pos] != '(') {
    auto is_name = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
    };
    while (pos < message.size() && is_name(message[pos])) ++pos;
    if (pos < message.size() && message[pos] == '(') {  // Ray's wrapper: Type(Cause)
      ++pos;
      while (pos < message.size() && is_name(message[pos])) ++pos;
      if (pos >= message.size() || message[pos] != ')') return std::string_view::npos;
      ++pos;
    }
    if (message.substr(pos, 2) != ": ") return std::string_view::npos;
    pos += 2;
  }
  if (pos + 1 >= message.size() || message[pos] != '(' ||
      (message[pos + 1] != '\'' && message[pos + 1] != '"')) {
    return std::string_view::npos;
  }
  return pos;
}

void AppendDecoded(std::string_view s, std::string* out) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char next = s[i + 1];
      if (next == '"' || next == '\\' || next == '\'') {
        out->push_back(next);
        ++i;
        continue;
      }
      if (next == 't') {
        out->push_back(' ');
        ++i;
        continue;
      }
    }
    out->push_back(s[i]);
  }
}

}  // namespace

bool LooksCutOff(std::string_view piece) {
  piece = TrimRight(piece);
  if (piece.empty()) return false;
  if (piece.size() >= kNarrowestTerminal) return true;
  const char last = piece.back();
  if (last == ',' || last == ':' || last == '(' || last == '[') return true;
  int open = 0;
  for (char c : piece) {
    if (c == '(' || c == '[') ++open;
    if ((c == ')' || c == ']') && open > 0) --open;
  }
  return open > 0;
}

bool CannotStartRecord(std::string_view line) {
  line = TrimRight(line);
  if (line.empty()) return false;
  switch (line[0]) {
    case ')':
    case ']':
    case '}':
    case ',':
    case ';':
      return true;
    case '(':
      return line.size() > 1 && (line[1] == '/' || line[1] == '.' || line[1] == '~');
    default:
      break;
  }
  return IsLocationAlone(line);
}

void AppendWrapped(std::string* text, size_t last_piece_size, std::string_view next) {
  if (!text->empty()) {
    const char last = text->back();
    const bool mid_word = last_piece_size >= kNarrowestTerminal && !next.empty() &&
                          std::isalnum(static_cast<unsigned char>(last)) &&
                          std::isalnum(static_cast<unsigned char>(next[0]));
    if (!mid_word && !IsSpace(last)) text->push_back(' ');
  }
  text->append(next);
}

bool ReadReprStrings(std::string_view message, std::string* out) {
  if (message.find("', ") == std::string_view::npos &&
      message.find("\", ") == std::string_view::npos) {
    return false;
  }
  // Python prints an exception built with several arguments as the repr of
  // its args tuple, and nothing else: the tuple is the whole message, after
  // the exception's type at most. A list, or a tuple among other words
  // (`Valid backends: ('A', 'B')`, `architectures ['X', 'Y']`), is a value
  // the message quotes and keeps its quotes.
  const size_t open = ReprTupleStart(message);
  if (open == std::string_view::npos) return false;
  std::string text;
  size_t end = 0;
  if (!ReadStringTuple(message, open, &text, &end)) return false;
  if (!TrimRight(message.substr(end)).empty()) return false;
  out->assign(message.substr(0, open));
  out->append(text);
  return true;
}

bool SplitEscapedLines(std::string_view message, std::vector<std::string>* lines) {
  // A JSON record only: elsewhere an escaped newline is part of one message
  // (a repr re-raised by another process reads as one exception line).
  if (message.size() < 2 || message[0] != '{' || message[1] != '"') return false;
  size_t first = std::string_view::npos;
  for (size_t i = message.find('\\'); i != std::string_view::npos && i + 1 < message.size();
       i = message.find('\\', i + 2)) {
    if (message[i + 1] == 'n') {
      first = i;
      break;
    }
  }
  if (first == std::string_view::npos) return false;
  // A JSON record's framing: `{"msg": "` before the text, `"}` after it.
  // The value holding the first escaped newline starts after the last
  // `": "` before it.
  std::string_view text = message;
  const std::string_view head = message.substr(0, first);
  const size_t value = head.rfind("\": \"");
  const size_t value_tight = head.rfind("\":\"");
  if (value != std::string_view::npos &&
      (value_tight == std::string_view::npos || value > value_tight)) {
    text.remove_prefix(value + 4);
  } else if (value_tight != std::string_view::npos) {
    text.remove_prefix(value_tight + 3);
  }
  const size_t close = text.rfind('"');
  if (close != std::string_view::npos && text.find('}', close) != std::string_view::npos) {
    text = text.substr(0, close);
  }
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] != '\\') continue;
    if (text[i + 1] == 'n') {
      std::string line;
      AppendDecoded(text.substr(start, i - start), &line);
      if (!TrimRight(line).empty()) out.push_back(std::move(line));
      start = i + 2;
    }
    ++i;  // an escaped character is never the start of another escape
  }
  std::string last;
  AppendDecoded(text.substr(start), &last);
  if (!TrimRight(last).empty()) out.push_back(std::move(last));
  if (out.empty()) return false;
  *lines = std::move(out);
  return true;
}

namespace {

// Whether a quote follows `(` or `[` in p[1, n): 32 bytes per test, the
// last test overlapping. n >= 33.
#ifdef FINGERPRINTD_AVX2_DISPATCH
__attribute__((target("avx2"))) inline bool OpensAt(const char* p) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i before = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p - 1));
  const __m256i quote = _mm256_or_si256(_mm256_cmpeq_epi8(x, _mm256_set1_epi8('\'')),
                                        _mm256_cmpeq_epi8(x, _mm256_set1_epi8('"')));
  const __m256i open = _mm256_or_si256(_mm256_cmpeq_epi8(before, _mm256_set1_epi8('(')),
                                       _mm256_cmpeq_epi8(before, _mm256_set1_epi8('[')));
  return _mm256_movemask_epi8(_mm256_and_si256(quote, open)) != 0;
}

__attribute__((target("avx2"))) bool OpensStringLiteralAvx2(const char* p, size_t n) {
  size_t i = 1;
  for (; i + 32 <= n; i += 32) {
    if (OpensAt(p + i)) return true;
  }
  return i != n && OpensAt(p + n - 32);
}
#endif

}  // namespace

bool ReadsAsWritten(std::string_view message) {
  // SplitEscapedLines reads a message starting with `{"` only, and
  // ReadReprStrings one where a string literal opens a tuple or a list: a
  // quote right after `(` or `[`.
  if (message.size() >= 2 && message[0] == '{' && message[1] == '"') return false;
  const char* p = message.data();
  const size_t n = message.size();
#ifdef FINGERPRINTD_AVX2_DISPATCH
  if (n >= 33 && CpuHasAvx2()) return !OpensStringLiteralAvx2(p, n);
#endif
  for (size_t i = 1; i < n; ++i) {
    if ((p[i] == '\'' || p[i] == '"') && (p[i - 1] == '(' || p[i - 1] == '[')) return false;
  }
  return true;
}

}  // namespace fingerprintd::parse
