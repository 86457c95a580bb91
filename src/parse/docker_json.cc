#include "parse/docker_json.h"

#include <cstdint>

namespace fingerprintd::parse {
namespace {

void SkipSpace(std::string_view s, size_t* i) {
  while (*i < s.size() && (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\r' || s[*i] == '\n')) ++*i;
}

// s[*i] == '"'. Advances past the closing quote; *body gets the raw inside.
bool ScanString(std::string_view s, size_t* i, std::string_view* body, bool* has_escape) {
  size_t j = *i + 1;
  *has_escape = false;
  while (j < s.size()) {
    const char c = s[j];
    if (c == '"') {
      *body = s.substr(*i + 1, j - *i - 1);
      *i = j + 1;
      return true;
    }
    if (c == '\\') {
      *has_escape = true;
      j += 2;
      continue;
    }
    ++j;
  }
  return false;
}

// Skips any JSON value at s[*i] (strings, nested objects/arrays, literals).
bool SkipValue(std::string_view s, size_t* i) {
  if (*i >= s.size()) return false;
  const char c = s[*i];
  if (c == '"') {
    std::string_view body;
    bool esc;
    return ScanString(s, i, &body, &esc);
  }
  if (c == '{' || c == '[') {
    int depth = 0;
    while (*i < s.size()) {
      const char d = s[*i];
      if (d == '"') {
        std::string_view body;
        bool esc;
        if (!ScanString(s, i, &body, &esc)) return false;
        continue;
      }
      if (d == '{' || d == '[') ++depth;
      if (d == '}' || d == ']') {
        if (--depth == 0) {
          ++*i;
          return true;
        }
      }
      ++*i;
    }
    return false;
  }
  const size_t start = *i;
  while (*i < s.size() && s[*i] != ',' && s[*i] != '}' && s[*i] != ']' && s[*i] != ' ') ++*i;
  return *i > start;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ReadHex4(std::string_view s, size_t pos, uint32_t* out) {
  if (pos + 4 > s.size()) return false;
  uint32_t v = 0;
  for (size_t k = 0; k < 4; ++k) {
    const int h = HexValue(s[pos + k]);
    if (h < 0) return false;
    v = (v << 4) | static_cast<uint32_t>(h);
  }
  *out = v;
  return true;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

bool AppendJsonUnescaped(std::string_view s, std::string* out) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t bs = s.find('\\', i);
    if (bs == std::string_view::npos) {
      out->append(s.data() + i, s.size() - i);
      return true;
    }
    out->append(s.data() + i, bs - i);
    if (bs + 1 >= s.size()) return false;
    const char e = s[bs + 1];
    i = bs + 2;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out->push_back(e);
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u': {
        uint32_t cp;
        if (!ReadHex4(s, i, &cp)) return false;
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t low;
          if (i + 6 <= s.size() && s[i] == '\\' && s[i + 1] == 'u' && ReadHex4(s, i + 2, &low) &&
              low >= 0xDC00 && low <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            i += 6;
          } else {
            cp = 0xFFFD;  // lone high surrogate
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;  // lone low surrogate
        }
        AppendUtf8(cp, out);
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

bool DecodeDockerJson(std::string_view line, std::string* log, DockerFields* fields) {
  *fields = DockerFields{};
  size_t i = 0;
  SkipSpace(line, &i);
  if (i >= line.size() || line[i] != '{') return false;
  ++i;
  bool has_log = false;
  while (true) {
    SkipSpace(line, &i);
    if (i >= line.size()) return false;
    if (line[i] == '}') break;
    if (line[i] != '"') return false;
    std::string_view key;
    bool key_escaped;
    if (!ScanString(line, &i, &key, &key_escaped)) return false;
    SkipSpace(line, &i);
    if (i >= line.size() || line[i] != ':') return false;
    ++i;
    SkipSpace(line, &i);
    if (i >= line.size()) return false;
    if (key == "log" || key == "stream" || key == "time") {
      if (line[i] != '"') return false;
      std::string_view body;
      bool escaped;
      if (!ScanString(line, &i, &body, &escaped)) return false;
      if (key == "log") {
        log->clear();
        if (escaped) {
          if (!AppendJsonUnescaped(body, log)) return false;
        } else {
          log->assign(body.data(), body.size());
        }
        has_log = true;
      } else if (key == "stream") {
        fields->stream = body;
      } else {
        fields->time = body;
      }
    } else if (!SkipValue(line, &i)) {
      return false;
    }
    SkipSpace(line, &i);
    if (i < line.size() && line[i] == ',') {
      ++i;
      continue;
    }
    if (i < line.size() && line[i] == '}') break;
    return false;
  }
  return has_log;
}

}  // namespace fingerprintd::parse
