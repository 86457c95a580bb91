// JsonObjectScanner: see json_object.h. Checked against nlohmann's DOM on
// seeded random and mutated records (tests/source/socket_framing_test.cc).
#include "common/json_object.h"

#include <cstdint>

#include "common/hash.h"

namespace fingerprintd {

namespace {

constexpr uint32_t kReplacement = 0xFFFD;

bool Hex4(const char* p, const char* end, uint32_t* out) {
  if (end - p < 4) return false;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const int h = HexDigitValue(p[i]);
    if (h < 0) return false;
    v = v << 4 | static_cast<uint32_t>(h);
  }
  *out = v;
  return true;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | cp >> 6));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | cp >> 12));
    out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | cp >> 18));
    out->push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

void JsonString::AppendTo(std::string* out) const {
  if (!escaped) {
    out->append(raw);
    return;
  }
  const char* p = raw.data();
  const char* end = p + raw.size();
  while (p < end) {
    const char* run = p;
    while (p < end && *p != '\\') ++p;
    out->append(run, p);
    if (p == end) return;
    const char e = p[1];  // valid: the scanner checked every escape
    p += 2;
    switch (e) {
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
        uint32_t cp = 0;
        Hex4(p, end, &cp);
        p += 4;
        uint32_t low = 0;
        if (cp >= 0xD800 && cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
            Hex4(p + 2, end, &low) && low >= 0xDC00 && low <= 0xDFFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          p += 6;
        } else if (cp >= 0xD800 && cp <= 0xDFFF) {
          cp = kReplacement;  // a lone surrogate
        }
        AppendUtf8(cp, out);
        break;
      }
      default:  // " \ /
        out->push_back(e);
        break;
    }
  }
}

bool JsonObjectScanner::Scan(std::string_view record, const OnString& on_string) {
  p_ = record.data();
  end_ = p_ + record.size();
  path_.clear();
  stack_.clear();
  path_len_.clear();
  arrays_ = 0;
  SkipSpace();
  if (p_ == end_ || *p_ != '{') return false;
  bool want_value = true;
  while (true) {
    SkipSpace();
    if (want_value) {
      if (p_ == end_) return false;
      const char c = *p_;
      if (c == '{' || c == '[') {
        ++p_;
        Push(c);
        SkipSpace();
        if (p_ < end_ && *p_ == (c == '{' ? '}' : ']')) {
          ++p_;
          Pop();
          want_value = false;
        } else if (c == '{' && !Key()) {
          return false;
        }
      } else if (c == '"') {
        JsonString value;
        if (!String(&value.raw, &value.escaped)) return false;
        if (arrays_ == 0 && !stack_.empty() && stack_.back() == '{') on_string(path_, value);
        want_value = false;
      } else {
        if (!Scalar()) return false;
        want_value = false;
      }
      continue;
    }
    if (stack_.empty()) return p_ == end_;  // the root object closed: nothing may follow
    if (p_ == end_) return false;
    const char c = *p_++;
    if (c == ',') {
      want_value = true;
      if (stack_.back() == '{') {
        SkipSpace();
        if (!Key()) return false;
      }
    } else if (c == (stack_.back() == '{' ? '}' : ']')) {
      Pop();
    } else {
      return false;
    }
  }
}

void JsonObjectScanner::SkipSpace() {
  while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
}

void JsonObjectScanner::Push(char c) {
  stack_.push_back(c);
  path_len_.push_back(path_.size());
  if (c == '[') ++arrays_;
}

void JsonObjectScanner::Pop() {
  path_.resize(path_len_.back());
  path_len_.pop_back();
  if (stack_.back() == '[') --arrays_;
  stack_.pop_back();
}

// `"key"` then `:`; the path becomes the enclosing object's path + key.
bool JsonObjectScanner::Key() {
  JsonString key;
  if (p_ == end_ || *p_ != '"' || !String(&key.raw, &key.escaped)) return false;
  SkipSpace();
  if (p_ == end_ || *p_ != ':') return false;
  ++p_;
  path_.resize(path_len_.back());
  if (path_len_.size() > 1) path_ += '.';  // nested, even under an empty key
  key.AppendTo(&path_);
  return true;
}

// A string at p_ (its opening quote): its body, escapes validated.
bool JsonObjectScanner::String(std::string_view* raw, bool* escaped) {
  const char* start = ++p_;
  *escaped = false;
  while (true) {
    while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) {
      ++p_;
    }
    if (p_ == end_ || static_cast<unsigned char>(*p_) < 0x20) return false;
    if (*p_ == '"') {
      *raw = std::string_view(start, static_cast<size_t>(p_ - start));
      ++p_;
      return true;
    }
    *escaped = true;
    if (++p_ == end_) return false;
    switch (*p_++) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        break;
      case 'u': {
        uint32_t unit;
        if (!Hex4(p_, end_, &unit)) return false;
        p_ += 4;
        break;
      }
      default:
        return false;
    }
  }
}

bool JsonObjectScanner::Digits() {
  const char* start = p_;
  while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
  return p_ > start;
}

bool JsonObjectScanner::Literal(std::string_view word) {
  if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
    return false;
  }
  p_ += word.size();
  return true;
}

// true, false, null or a number.
bool JsonObjectScanner::Scalar() {
  switch (*p_) {
    case 't':
      return Literal("true");
    case 'f':
      return Literal("false");
    case 'n':
      return Literal("null");
    default:
      break;
  }
  if (*p_ == '-') ++p_;
  if (p_ == end_) return false;
  if (*p_ == '0') {
    ++p_;
  } else if (!Digits()) {
    return false;
  }
  if (p_ < end_ && *p_ == '.') {
    ++p_;
    if (!Digits()) return false;
  }
  if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
    ++p_;
    if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (!Digits()) return false;
  }
  return true;
}

}  // namespace fingerprintd
