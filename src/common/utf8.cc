// UTF-8 checks and the escape of names: see utf8.h.
#include "common/utf8.h"

namespace fingerprintd {

namespace {

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the valid sequence at text[i]: 1 for ASCII, 0 when invalid.
size_t SequenceAt(std::string_view text, size_t i) {
  if (static_cast<unsigned char>(text[i]) < 0x80) return 1;
  return Utf8SequenceLength(text.substr(i));
}

}  // namespace

size_t Utf8SequenceLength(std::string_view text) {
  const size_t n = text.size();
  const unsigned char c = static_cast<unsigned char>(text[0]);
  auto cont = [&](size_t k) {
    return k < n && IsContinuation(static_cast<unsigned char>(text[k]));
  };
  auto in = [&](size_t k, unsigned lo, unsigned hi) {
    if (k >= n) return false;
    const unsigned char b = static_cast<unsigned char>(text[k]);
    return b >= lo && b <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return in(1, 0xA0, 0xBF) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return in(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c == 0xF0) return in(1, 0x90, 0xBF) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return in(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = SequenceAt(text, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string EscapeInvalidUtf8(std::string_view text) {
  if (IsValidUtf8(text)) return std::string(text);
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    const size_t len = SequenceAt(text, i);
    if (len > 0) {
      out.append(text.substr(i, len));
      i += len;
      continue;
    }
    const auto byte = static_cast<unsigned char>(text[i++]);
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
  }
  return out;
}

}  // namespace fingerprintd
